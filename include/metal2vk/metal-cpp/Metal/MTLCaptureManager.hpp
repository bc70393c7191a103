// GPU capture. metal2vk has no capture tool: startCapture fails with CaptureErrorNotSupported, as Metal does when
// capture is not enabled for the process.
#pragma once

#include "MTLTypes.hpp"

namespace MTL {

class CaptureDescriptor : public NS::Referencing<CaptureDescriptor> {
 public:
  static CaptureDescriptor* alloc();
  CaptureDescriptor* init();
  NS::Object* captureObject() const;
  void setCaptureObject(NS::Object* object);
  CaptureDestination destination() const;
  void setDestination(CaptureDestination destination);
  NS::URL* outputURL() const;
  void setOutputURL(NS::URL* url);

 protected:
  CaptureDescriptor() = default;
};

class CaptureManager : public NS::Referencing<CaptureManager> {
 public:
  static CaptureManager* sharedCaptureManager();
  bool supportsDestination(CaptureDestination destination);
  bool startCapture(const CaptureDescriptor* descriptor, NS::Error** error);
  void stopCapture();
  bool isCapturing() const;

 protected:
  CaptureManager() = default;
};

}  // namespace MTL
