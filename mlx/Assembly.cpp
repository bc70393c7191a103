// MLX's kernel assembly (../shared/MLX_METAL_KERNEL.md), written from the rules stated there.
#include <cstring>

#include "metal2vk/mlx.h"

namespace m2v::mlx {

namespace {

struct DtypeRow {
  Dtype dtype;
  size_t size;
  const char* type;  // kernel type string
  const char* name;  // MLX dtype name
};

constexpr DtypeRow kDtypes[] = {
    {Dtype::Bool, 1, "bool", "bool"},
    {Dtype::UInt8, 1, "uint8_t", "uint8"},
    {Dtype::UInt16, 2, "uint16_t", "uint16"},
    {Dtype::UInt32, 4, "uint32_t", "uint32"},
    {Dtype::UInt64, 8, "uint64_t", "uint64"},
    {Dtype::Int8, 1, "int8_t", "int8"},
    {Dtype::Int16, 2, "int16_t", "int16"},
    {Dtype::Int32, 4, "int32_t", "int32"},
    {Dtype::Int64, 8, "int64_t", "int64"},
    {Dtype::Float16, 2, "float16_t", "float16"},
    {Dtype::BFloat16, 2, "bfloat16_t", "bfloat16"},
    {Dtype::Float32, 4, "float", "float32"},
    {Dtype::Float64, 8, "double", "float64"},
    {Dtype::Complex64, 8, "complex64_t", "complex64"},
};

const DtypeRow& row(Dtype d) { return kDtypes[static_cast<size_t>(d)]; }

// Inputs with fewer elements than this live in the constant address space (rule 2).
constexpr size_t kMaxConstantArraySize = 8;

// The built-in attributes, in MLX's fixed order, with their parameter types (rule 6).
constexpr std::pair<const char*, const char*> kAttributes[] = {
    {"dispatch_quadgroups_per_threadgroup", "uint"},
    {"dispatch_simdgroups_per_threadgroup", "uint"},
    {"dispatch_threads_per_threadgroup", "uint3"},
    {"grid_origin", "uint3"},
    {"grid_size", "uint3"},
    {"quadgroup_index_in_threadgroup", "uint"},
    {"quadgroups_per_threadgroup", "uint"},
    {"simdgroup_index_in_threadgroup", "uint"},
    {"simdgroups_per_threadgroup", "uint"},
    {"thread_execution_width", "uint"},
    {"thread_index_in_quadgroup", "uint"},
    {"thread_index_in_simdgroup", "uint"},
    {"thread_index_in_threadgroup", "uint"},
    {"thread_position_in_grid", "uint3"},
    {"thread_position_in_threadgroup", "uint3"},
    {"threadgroup_position_in_grid", "uint3"},
    {"threadgroups_per_grid", "uint3"},
    {"threads_per_grid", "uint3"},
    {"threads_per_simdgroup", "uint"},
    {"threads_per_threadgroup", "uint3"},
};

size_t elementCount(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t s : shape) n *= size_t(s);
  return n;
}

}  // namespace

size_t itemSize(Dtype d) { return row(d).size; }
const char* typeString(Dtype d) { return row(d).type; }
const char* dtypeName(Dtype d) { return row(d).name; }

std::optional<Dtype> parseDtype(std::string_view name) {
  for (const auto& r : kDtypes)
    if (name == r.name || name == r.type) return r.dtype;
  static const std::pair<const char*, Dtype> aliases[] = {
      {"bool_", Dtype::Bool},     {"?", Dtype::Bool},          {"b1", Dtype::Bool},
      {"u1", Dtype::UInt8},       {"u2", Dtype::UInt16},       {"u4", Dtype::UInt32},
      {"u8", Dtype::UInt64},      {"i1", Dtype::Int8},         {"i2", Dtype::Int16},
      {"i4", Dtype::Int32},       {"i8", Dtype::Int64},        {"f2", Dtype::Float16},
      {"f4", Dtype::Float32},     {"f8", Dtype::Float64},      {"c8", Dtype::Complex64},
      {"half", Dtype::Float16},   {"bfloat", Dtype::BFloat16}, {"uint", Dtype::UInt32},
      {"int", Dtype::Int32},      {"float16_t", Dtype::Float16}, {"ushort", Dtype::UInt16},
      {"short", Dtype::Int16},    {"uchar", Dtype::UInt8},     {"char", Dtype::Int8},
      {"long", Dtype::Int64},     {"ulong", Dtype::UInt64},
  };
  for (const auto& [alias, d] : aliases)
    if (name == alias) return d;
  return std::nullopt;
}

std::vector<ShapeInfo> detectShapeInfos(const std::string& source, const std::vector<std::string>& inputNames) {
  // Rule 4: a plain substring search of the body (never the header).
  std::vector<ShapeInfo> infos;
  infos.reserve(inputNames.size());
  for (const auto& n : inputNames) {
    ShapeInfo s;
    s.shape = source.find(n + "_shape") != std::string::npos;
    s.strides = source.find(n + "_strides") != std::string::npos;
    s.ndim = source.find(n + "_ndim") != std::string::npos;
    infos.push_back(s);
  }
  return infos;
}

std::vector<std::string> detectAttributes(const std::string& source) {
  std::vector<std::string> attrs;
  for (const auto& [attr, type] : kAttributes)
    if (source.find(attr) != std::string::npos)
      attrs.push_back(std::string("  ") + type + " " + attr + " [[" + attr + "]]");
  return attrs;
}

std::string writeTemplateArgs(const TemplateArgs& args) {
  if (args.empty()) return {};
  std::string s = "<";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) s += ", ";
    const TemplateArg& v = args[i].second;
    if (const bool* b = std::get_if<bool>(&v)) s += *b ? "1" : "0";
    else if (const int* n = std::get_if<int>(&v)) s += std::to_string(*n);
    else s += typeString(std::get<Dtype>(v));
  }
  return s + ">";
}

std::string kernelName(const std::string& name, const std::vector<InputInfo>& inputs,
                       const std::vector<Dtype>& outputDtypes, const TemplateArgs& args) {
  std::string kname = "custom_kernel_" + name;
  if (!args.empty()) {
    // Rule 8: "<", ">" and ", " each become "_", the last character is dropped, and the result is appended after
    // one more "_" (hence the double underscore).
    std::string def = writeTemplateArgs(args), hash;
    for (size_t i = 0; i < def.size(); ++i) {
      if (def[i] == '<' || def[i] == '>') {
        hash += '_';
      } else if (def[i] == ',' && i + 1 < def.size() && def[i + 1] == ' ') {
        hash += '_';
        ++i;
      } else {
        hash += def[i];
      }
    }
    hash.pop_back();
    kname += "_" + hash;
  }
  for (const auto& in : inputs) {
    kname += "_";
    kname += typeString(in.dtype);
    if (in.shape.empty()) kname += "s";
    else if (elementCount(in.shape) < kMaxConstantArraySize) kname += "c";
  }
  for (Dtype d : outputDtypes) {
    kname += "_";
    kname += typeString(d);
  }
  return kname;
}

Assembly assemble(const KernelSpec& spec, const std::vector<InputInfo>& inputs, const std::vector<Dtype>& outputDtypes,
                  const TemplateArgs& args) {
  if (inputs.size() != spec.inputNames.size())
    throw std::invalid_argument("[metal_kernel] Expected `inputs` to have size " +
                                std::to_string(spec.inputNames.size()) + " but got size " +
                                std::to_string(inputs.size()) + ".");
  if (outputDtypes.size() != spec.outputNames.size())
    throw std::invalid_argument("[metal_kernel] Expected `output_dtypes` to have size " +
                                std::to_string(spec.outputNames.size()) + " but got size " +
                                std::to_string(outputDtypes.size()) + ".");
  const std::vector<ShapeInfo> shapeInfos = detectShapeInfos(spec.source, spec.inputNames);
  const std::vector<std::string> attributes = detectAttributes(spec.source);

  Assembly a;
  a.kernelName = kernelName(spec.name, inputs, outputDtypes, args);
  std::string& s = a.source;
  s.reserve(spec.header.size() + spec.source.size() + 4096);
  s += spec.header;
  if (!args.empty()) {
    s += "template <";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i > 0) s += ", ";
      const TemplateArg& v = args[i].second;
      s += std::holds_alternative<int>(v) ? "int" : std::holds_alternative<bool>(v) ? "bool" : "typename";
      s += " ";
      s += args[i].first;
    }
    s += ">\n";
  }
  s += "[[kernel]] void " + a.kernelName + "(\n";

  uint32_t index = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = spec.inputNames[i];
    const InputInfo& in = inputs[i];
    const bool scalar = in.shape.empty();
    s += "  const ";
    s += elementCount(in.shape) < kMaxConstantArraySize ? "constant" : "device";
    s += " ";
    s += typeString(in.dtype);
    s += scalar ? "&" : "*";
    s += " " + name + " [[buffer(" + std::to_string(index) + ")]],\n";
    a.slots.push_back({BufferSlot::Kind::Input, uint32_t(i), index++});
    if (scalar) continue;
    if (shapeInfos[i].shape) {
      s += "  const constant int* " + name + "_shape [[buffer(" + std::to_string(index) + ")]],\n";
      a.slots.push_back({BufferSlot::Kind::Shape, uint32_t(i), index++});
    }
    if (shapeInfos[i].strides) {
      s += "  const constant int64_t* " + name + "_strides [[buffer(" + std::to_string(index) + ")]],\n";
      a.slots.push_back({BufferSlot::Kind::Strides, uint32_t(i), index++});
    }
    if (shapeInfos[i].ndim) {
      s += "  const constant int& " + name + "_ndim [[buffer(" + std::to_string(index) + ")]],\n";
      a.slots.push_back({BufferSlot::Kind::Ndim, uint32_t(i), index++});
    }
  }
  const size_t paramCount = inputs.size() + spec.outputNames.size();
  for (size_t i = 0; i < spec.outputNames.size(); ++i) {
    s += "  device ";
    if (spec.atomicOutputs) s += "atomic<";
    s += typeString(outputDtypes[i]);
    if (spec.atomicOutputs) s += ">";
    s += "* " + spec.outputNames[i] + " [[buffer(" + std::to_string(index) + ")]]";
    // Rule 9: MLX compares the buffer counter (which includes shape/stride buffers) with the parameter count.
    s += (index + 1 < paramCount || !attributes.empty()) ? ",\n" : ") {\n";
    a.slots.push_back({BufferSlot::Kind::Output, uint32_t(i), index++});
  }
  for (size_t i = 0; i < attributes.size(); ++i) {
    s += attributes[i];
    s += i + 1 < attributes.size() ? ",\n" : ") {\n";
  }
  s += spec.source;
  s += "\n}\n";
  if (!args.empty()) {
    const std::string inst = a.kernelName + writeTemplateArgs(args);
    s += "\ntemplate [[host_name(\"" + a.kernelName + "\")]] [[kernel]] decltype(" + inst + ") " + inst + ";\n";
  }
  return a;
}

std::string compilerInput(const Assembly& assembly) {
  return "#include <mlx_prelude>\n#line 1\n" + assembly.source;
}

}  // namespace m2v::mlx
