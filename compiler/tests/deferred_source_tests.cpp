// Deferred sources (include/metal2vk/deferred_source.h): which explicit instantiations the split takes out of the
// text, what stays, and that an entry compiled from its deferred source is the module the whole file compiles to.
#include <gtest/gtest.h>

#include <algorithm>

#include "metal2vk/deferred_source.h"

namespace {

int countLines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

TEST(DeferredSource, TakesOutHostNamedInstantiationsOnly) {
  const std::string text =
      "# 1 \"k.metal\"\n"
      "#include <metal_stdlib>\n"
      "template <typename T> [[kernel]] void k(device T* p) { const char* s = \"template [[host_name(\\\"no\\\")]]\"; "
      "}\n"
      "template void helper<int>(int);\n"  // no host name: not an entry point
      "struct S { template [[host_name(\"inside_a_struct\")]] void f(); };\n"
      "template [[host_name(\"k_\" \"float\")]] [[kernel]] void k<float>(device float*); "
      "template [[host_name(\"k_int\")]]\n  [[kernel]] void k<int>(device int*);\n"
      "namespace outer { namespace inner::deep {\n"
      "template [[host_name(\"k_half\")]] [[kernel]] void k<half>(device half*);\n"
      "} }\n"
      "using namespace metal;\n"
      "template [[host_name(\"k_uint\")]] [[kernel]] void k<uint>(device uint*);\n";
  m2v::DeferredSource source = m2v::splitInstantiations(text, "k.metal");
  ASSERT_EQ(source.entries.size(), 4u);
  EXPECT_EQ(source.entries[0].name, "k_float");  // adjacent literals joined
  EXPECT_EQ(source.entries[1].name, "k_int");
  EXPECT_EQ(source.entries[1].instantiation,
            "template [[host_name(\"k_int\")]]\n  [[kernel]] void k<int>(device int*);");
  EXPECT_EQ(source.entries[2].name, "k_half");
  EXPECT_EQ(source.entries[2].instantiation,
            "namespace outer { namespace inner::deep { template [[host_name(\"k_half\")]] [[kernel]] void "
            "k<half>(device half*); } }");
  EXPECT_EQ(source.entries[3].name, "k_uint");  // `using namespace` opens nothing
  EXPECT_EQ(source.entries[3].instantiation.rfind("template", 0), 0u);
  // What is not an entry point's instantiation stays, and so does every line break.
  EXPECT_NE(source.body.find("template void helper<int>(int);"), std::string::npos);
  EXPECT_NE(source.body.find("inside_a_struct"), std::string::npos);
  EXPECT_NE(source.body.find("\"template [[host_name(\\\"no\\\")]]\""), std::string::npos);
  EXPECT_NE(source.body.find("#include <metal_stdlib>"), std::string::npos);
  EXPECT_EQ(source.body.find("k<float>"), std::string::npos);
  EXPECT_EQ(countLines(source.body), countLines(text));
}

TEST(DeferredSource, AnEntryCompilesToTheModuleOfTheWholeFile) {
  const std::string text = R"(#include <metal_stdlib>
using namespace metal;
template <typename T, int N>
[[kernel]] void sum_rows(const device T* in [[buffer(0)]], device float* out [[buffer(1)]],
                         uint row [[thread_position_in_grid]]) {
  float s = 0;
  for (int i = 0; i < N; ++i) s += float(in[row * N + i]);
  out[row] = s;
}
kernel void plain(device float* x [[buffer(0)]]) { x[0] = 1.0f; }
template [[host_name("sum_rows_float_4")]] [[kernel]] void sum_rows<float, 4>(const device float*, device float*, uint);
template [[host_name("sum_rows_half_8")]] [[kernel]] void sum_rows<half, 8>(const device half*, device float*, uint);
)";
  m2v::CompileResult whole = m2v::compileSource(text, "sum_rows.metal");
  ASSERT_EQ(whole.status, m2v::Status::Ok) << whole.diagnostics.format();
  m2v::DeferredSource source = m2v::splitInstantiations(text, "sum_rows.metal");
  ASSERT_EQ(source.entries.size(), 2u);
  for (const m2v::DeferredEntry& entry : source.entries) {
    m2v::CompileResult alone = m2v::compileSource(source.sourceFor(entry), source.name, source.optionsFor(entry));
    ASSERT_EQ(alone.status, m2v::Status::Ok) << alone.diagnostics.format();
    ASSERT_EQ(alone.kernels.size(), 1u) << entry.name;
    const m2v::CompiledKernel* same = nullptr;
    for (const m2v::CompiledKernel& k : whole.kernels)
      if (k.reflection.entry == entry.name) same = &k;
    ASSERT_NE(same, nullptr) << entry.name;
    EXPECT_EQ(alone.kernels[0].spirv, same->spirv) << entry.name;
    EXPECT_EQ(m2v::toJson(alone.kernels[0].reflection), m2v::toJson(same->reflection)) << entry.name;
  }
  // The body alone holds the plain kernel and no instantiation.
  m2v::CompileResult body = m2v::compileSource(source.body, source.name);
  ASSERT_EQ(body.status, m2v::Status::Ok) << body.diagnostics.format();
  ASSERT_EQ(body.kernels.size(), 1u);
  EXPECT_EQ(body.kernels[0].reflection.entry, "plain");
}

}  // namespace
