// GPU capture: metal2vk has no capture tool, so a capture never starts (CaptureErrorNotSupported).
#include "objects.h"

using namespace m2v::metal;

namespace MTL {

CaptureDescriptor* CaptureDescriptor::alloc() { return new CaptureDescriptorImpl; }
CaptureDescriptor* CaptureDescriptor::init() { return this; }
NS::Object* CaptureDescriptor::captureObject() const { return impl<const CaptureDescriptorImpl>(this)->object.get(); }
void CaptureDescriptor::setCaptureObject(NS::Object* object) {
  impl<CaptureDescriptorImpl>(this)->object = NS::RetainPtr(object);
}
CaptureDestination CaptureDescriptor::destination() const {
  return impl<const CaptureDescriptorImpl>(this)->destination;
}
void CaptureDescriptor::setDestination(CaptureDestination d) { impl<CaptureDescriptorImpl>(this)->destination = d; }
NS::URL* CaptureDescriptor::outputURL() const { return impl<const CaptureDescriptorImpl>(this)->url.get(); }
void CaptureDescriptor::setOutputURL(NS::URL* url) { impl<CaptureDescriptorImpl>(this)->url = NS::RetainPtr(url); }

CaptureManager* CaptureManager::sharedCaptureManager() {
  static CaptureManager* manager = new CaptureManagerImpl;
  return manager;
}
bool CaptureManager::supportsDestination(CaptureDestination) { return false; }
bool CaptureManager::startCapture(const CaptureDescriptor*, NS::Error** error) {
  setError(error, kCaptureErrorDomain, CaptureErrorNotSupported,
           "GPU capture is not supported by metal2vk (use a Vulkan capture tool such as RenderDoc on the process)");
  return false;
}
void CaptureManager::stopCapture() {}
bool CaptureManager::isCapturing() const { return false; }

}  // namespace MTL
