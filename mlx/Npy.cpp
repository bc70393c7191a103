// .npy reading and writing (NumPy format 1.0-3.0, little-endian, C or Fortran order on read, C order on write).
#include <cstring>
#include <fstream>
#include <regex>

#include "metal2vk/mlx.h"

namespace m2v::mlx {

namespace {

const char* descrFor(Dtype d) {
  switch (d) {
    case Dtype::Bool: return "|b1";
    case Dtype::UInt8: return "|u1";
    case Dtype::UInt16: return "<u2";
    case Dtype::UInt32: return "<u4";
    case Dtype::UInt64: return "<u8";
    case Dtype::Int8: return "|i1";
    case Dtype::Int16: return "<i2";
    case Dtype::Int32: return "<i4";
    case Dtype::Int64: return "<i8";
    case Dtype::Float16: return "<f2";
    case Dtype::BFloat16: return "<u2";  // numpy has no bfloat16: the bits travel as uint16
    case Dtype::Float32: return "<f4";
    case Dtype::Float64: return "<f8";
    case Dtype::Complex64: return "<c8";
  }
  return "";
}

}  // namespace

Array readNpy(const std::string& path, std::optional<Dtype> asDtype) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open " + path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw std::invalid_argument(path + ": not a .npy file");
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    uint8_t l[2];
    in.read(reinterpret_cast<char*>(l), 2);
    headerLen = l[0] | (uint32_t(l[1]) << 8);
  } else {
    uint8_t l[4];
    in.read(reinterpret_cast<char*>(l), 4);
    headerLen = l[0] | (uint32_t(l[1]) << 8) | (uint32_t(l[2]) << 16) | (uint32_t(l[3]) << 24);
  }
  // NumPy writes headers of a few hundred bytes; a length beyond 64 KiB is a damaged file, not a reason to allocate
  // gigabytes (or to run the header regexes over them).
  if (!in || headerLen > (64u << 10)) throw std::invalid_argument(path + ": bad header length");
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen)) throw std::invalid_argument(path + ": truncated header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    throw std::invalid_argument(path + ": no descr");
  std::string descr = m[1];
  bool fortran = std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    throw std::invalid_argument(path + ": no shape");
  std::vector<int64_t> shape;
  std::string dims = m[1];
  const std::regex digits(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), digits), end; it != end; ++it) {
    if (it->length() > 18) throw std::invalid_argument(path + ": dimension " + it->str() + " is too large");
    shape.push_back(std::stoll(it->str()));
  }
  if (descr.size() < 2 || descr[0] == '>') throw std::invalid_argument(path + ": big-endian data is not supported");
  std::optional<Dtype> d = parseDtype(descr.substr(1));
  if (!d) throw std::invalid_argument(path + ": unsupported dtype '" + descr + "'");
  if (asDtype) {
    if (itemSize(*asDtype) != itemSize(*d))
      throw std::invalid_argument(path + ": dtype " + descr + " cannot be read as " + dtypeName(*asDtype));
    d = asDtype;
  }
  {  // the data must be in the file before anything is allocated for it
    size_t elements = 1, bytes = 0;
    for (int64_t dim : shape)
      if (__builtin_mul_overflow(elements, size_t(dim), &elements)) throw std::invalid_argument(path + ": shape too large");
    const std::streamoff here = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff end = in.tellg();
    in.seekg(here);
    if (__builtin_mul_overflow(elements, itemSize(*d), &bytes) || here < 0 || uint64_t(end - here) < bytes)
      throw std::invalid_argument(path + ": truncated data");
  }
  Array a = Array::allocate(*d, shape);
  if (a.nbytes() && !in.read(static_cast<char*>(a.mutableData()), std::streamsize(a.nbytes())))
    throw std::invalid_argument(path + ": truncated data");
  if (fortran && shape.size() > 1) {
    std::vector<int64_t> st(shape.size());
    int64_t acc = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      st[i] = acc;
      acc *= shape[i];
    }
    a.strides = st;
  }
  return a;
}

void writeNpy(const std::string& path, const Array& a) {
  std::string header = "{'descr': '" + std::string(descrFor(a.dtype)) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.shape.size(); ++i) header += (i ? ", " : "") + std::to_string(a.shape[i]);
  if (a.shape.size() == 1) header += ",";
  header += ")";
  header += ", }";
  // pad with spaces so that the data starts at a multiple of 64 bytes, ending with a newline
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::invalid_argument("cannot write " + path);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  char l[2] = {char(len & 0xff), char(len >> 8)};
  out.write(l, 2);
  out.write(header.data(), std::streamsize(header.size()));
  if (!a.rowContiguous()) throw std::invalid_argument("writeNpy: array is not row-contiguous");
  out.write(static_cast<const char*>(a.data), std::streamsize(a.nbytes()));
  if (!out) throw std::invalid_argument("error writing " + path);
}

}  // namespace m2v::mlx
