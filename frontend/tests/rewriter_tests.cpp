// The Metal dialect rewriter: what each rule turns Metal into, and that lines and columns map back.
#include <gtest/gtest.h>

#include <algorithm>

#include "MslRewriter.h"

namespace m2v::frontend {
namespace {

std::string rewrite(const std::string& s) { return rewriteMetalSource(s).text; }

TEST(Rewriter, AttributesAreLeftToClang) {
  // Metal's attributes are registered with clang (MetalAttributes.cpp): the rewriter leaves them as written, in
  // every placement and spacing
  for (const char* s :
       {"device float* x [[buffer(3)]]", "uint3 tgpig[[threadgroup_position_in_grid]]",
        "f(device float* b [[buffer(2), function_constant(has_bias)]])", "constant bool b [[function_constant(7)]];",
        "#define SC static constant constexpr const\nSC bool inv_ [[function_constant(0)]];", "[[kernel]] void f()",
        "texture2d<float> t [[texture(0)]]", "[[max_total_threads_per_threadgroup(256)]] [[kernel]] void f() {}"})
    EXPECT_EQ(rewrite(s), s);
}

TEST(Rewriter, ThreadgroupAttributeIsRespelled) {
  // `threadgroup` is the address-space macro: as an attribute name it is spelled so that it is not expanded
  EXPECT_EQ(rewrite("threadgroup float* t [[threadgroup(N + 1)]]"),
            "threadgroup float* t [[__m2v_threadgroup(N + 1)]]");
  EXPECT_EQ(rewrite("threadgroup float* t[[id(1), threadgroup(0)]]"),
            "threadgroup float* t[[id(1), __m2v_threadgroup(0)]]");
  EXPECT_EQ(rewrite("f(threadgroup(x))"), "f(threadgroup(x))");
}

TEST(Rewriter, AddressSpaceOverloadsKeepTheFirst) {
  // overloads that differ only in the address space of `this` collapse to the first; lines are kept
  std::string src =
      "struct C {\n  C(int x) thread : v(x) {}\n  C(int x) device : v(x) {}\n  int get() const device { return v; }\n"
      "  int get() const constant { return v; }\n  int v;\n};";
  std::string out = rewrite(src);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
  EXPECT_NE(out.find("C(int x)        : v(x) {}"), std::string::npos) << out;
  EXPECT_EQ(out.find("C(int x) device"), std::string::npos) << out;
  EXPECT_NE(out.find("int get() const        { return v; }"), std::string::npos) << out;
  EXPECT_EQ(out.find("constant { return v; }"), std::string::npos) << out;
}

TEST(Rewriter, AttributeListInAMacroKeepsItsLineContinuations) {
  std::string src =
      "#define inst(name, f, ...) \\\n  template [[host_name( \\\n    name)]] [[kernel]] decltype(f<__VA_ARGS__>) "
      "f<__VA_ARGS__>;\n";
  std::string out = rewrite(src);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_EQ(out.find("\n\n"), std::string::npos) << out;  // no line of the macro left without its backslash
}

TEST(Rewriter, VectorConversionsThroughNamesAndBraces) {
  EXPECT_EQ(rewrite("static_cast<T>(x)"), "__m2v::static_cast_<T>(x)");
  EXPECT_EQ(rewrite("static_cast<int>(x)"), "static_cast<int>(x)");
  EXPECT_EQ(rewrite("f<I>({a * b, c, d}, s)"), "f<I>(__m2v::braced(a * b, c, d), s)");
  EXPECT_EQ(rewrite("f({a})"), "f({a})");  // one element: C++ initializes a scalar from it
  EXPECT_EQ(rewrite("void g() { int2 o(0, r); }"), "void g() { int2 o = __m2v::vec_ctor<int2>(0, r); }");
  EXPECT_EQ(rewrite("int2 h(int a, int b);"), "int2 h(int a, int b);");  // a declaration outside a body
  EXPECT_EQ(rewrite("metal::vec<T, 2>(1, 0)"), "__m2v::vec_ctor<metal::vec<T, 2>>(1, 0)");
  EXPECT_EQ(rewrite("operator float2() const"), "operator float2() const");
}

TEST(Rewriter, ConditionalOperandsBecomeValues) {
  EXPECT_EQ(rewrite("x = c ? tg[i] : op.init;"), "x = c ? __m2v::value(tg[i]) : __m2v::value(op.init);");
  EXPECT_EQ(rewrite("x = c ? 1 : 2;"), "x = c ? 1 : 2;");
  EXPECT_EQ(rewrite("{ c ? f() : g(); }"), "{ c ? f() : g(); }");  // a statement: maybe void
  EXPECT_EQ(rewrite("A<t ? B : C> m;"), "A<t ? B : C> m;");        // a template argument
  EXPECT_EQ(rewrite("y = c ? cast<U>(r) : z;"), "y = c ? __m2v::value(cast<U>(r)) : __m2v::value(z);");
}

TEST(Rewriter, BoolSwizzlesAtTheSitesTheFrontEndFound) {
  // the front end records the offsets of the component names clang rejected; only those are rewritten
  std::string src = "x = b.xy; y = f(a)[i].z; z = c.xy;";
  RewriteContext context;
  context.boolSwizzles["k.metal"] = {src.find("xy"), src.find(".z") + 1};
  EXPECT_EQ(rewriteMetalSource(src, &context, "k.metal").text,
            "x = __m2v::swizzle<0, 1>(b); y = __m2v::swizzle<2>(f(a)[i]); z = c.xy;");
}

TEST(Rewriter, CoherentBecomesVolatile) {
  EXPECT_EQ(rewrite("volatile coherent(system) device uint* p"), "volatile                  device uint* p");
  EXPECT_EQ(rewrite("coherent(device) device uint* p"), "volatile device uint* p");
}

TEST(Rewriter, KernelKeywordAndAttribute) {
  EXPECT_EQ(rewrite("kernel void f()"), "__attribute__((annotate(\"m2v.kernel\"))) void f()");
  EXPECT_EQ(rewrite("[[kernel]] void f()"), "[[kernel]] void f()");
  // `kernel` as an ordinary name is left alone when no type follows.
  EXPECT_EQ(rewrite("int kernel = 3;"), "int kernel = 3;");
  EXPECT_EQ(rewrite("s.kernel k;"), "s.kernel k;");
}

TEST(Rewriter, RenderStageQualifiers) {
  // vertex and fragment functions are declared and not compiled (their bodies are skipped by the front end)
  EXPECT_EQ(rewrite("vertex V f(uint v [[vertex_id]])"),
            "__attribute__((annotate(\"m2v.render_stage\", \"vertex\"))) V f(uint v [[vertex_id]])");
  EXPECT_EQ(rewrite("fragment half4 g()"), "__attribute__((annotate(\"m2v.render_stage\", \"fragment\"))) half4 g()");
  // the words as names
  EXPECT_EQ(rewrite("float3 vertex = p.vertex; f(fragment);"), "float3 vertex = p.vertex; f(fragment);");
}

TEST(Rewriter, KernelKeywordBeforeATypedefOrDecltype) {
  // a kernel instantiated through a function typedef or decltype: `kernel` precedes a type name, not `void`; the
  // attribute list of an explicit instantiation (where C++ allows none) takes the GNU spelling
  EXPECT_EQ(rewrite("template [[host_name(\"k_f\")]] kernel k_t k<float>;"),
            "template __attribute__((host_name(\"k_f\"))) __attribute__((annotate(\"m2v.kernel\"))) k_t k<float>;");
  EXPECT_EQ(rewrite("template kernel decltype(k<half>) k<half>;"),
            "template __attribute__((annotate(\"m2v.kernel\"))) decltype(k<half>) k<half>;");
  EXPECT_EQ(rewrite("extern kernel ns::k_t k;"), "extern __attribute__((annotate(\"m2v.kernel\"))) ns::k_t k;");
  // a macro named `kernel` stays a macro
  EXPECT_EQ(rewrite("#define kernel x\n#ifdef kernel\n"), "#define kernel x\n#ifdef kernel\n");
}

TEST(Rewriter, CStyleCastsToANameConvertAsMetalDoes) {
  // `(T) x` to a single name: vectors element-wise, half <-> bfloat by value (__m2v::c_cast_)
  EXPECT_EQ(rewrite("y = (float4) h;"), "y = __m2v::c_cast_<float4>( h);");
  EXPECT_EQ(rewrite("y = (q4_t) q4[i].xy;"), "y = __m2v::c_cast_<q4_t>( q4[i].xy);");
  EXPECT_EQ(rewrite("return (type4)(*(src + il)) * s;"), "return __m2v::c_cast_<type4>((*(src + il))) * s;");
  EXPECT_EQ(rewrite("m = f((o_t) 0.0f);"), "m = f(__m2v::c_cast_<o_t>( 0.0f));");
  EXPECT_EQ(rewrite("y = (float4)(half4) p->v;"), "y = __m2v::c_cast_<float4>(__m2v::c_cast_<half4>( p->v));");
  EXPECT_EQ(rewrite("y = (float4) as_type<half4>(u) + 1;"), "y = __m2v::c_cast_<float4>( as_type<half4>(u)) + 1;");
  // not casts: C++'s own scalar types, calls, conditions, parenthesized operands of a binary operator
  EXPECT_EQ(rewrite("y = (float) x + (uint) n;"), "y = (float) x + (uint) n;");
  EXPECT_EQ(rewrite("if (c) x = 1; f(a) (b); y = (a) + b;"), "if (c) x = 1; f(a) (b); y = (a) + b;");
  EXPECT_EQ(rewrite("void g(T) const;"), "void g(T) const;");
}

TEST(Rewriter, AddressSpaceOverloadBesideAnUnqualifiedOne) {
  // `MD() = default;` then `MD() threadgroup = default;`: the unqualified one serves every address space
  std::string out = rewrite("struct MD {\n  constexpr MD() = default;\n  constexpr MD() threadgroup = default;\n};");
  EXPECT_EQ(out, "struct MD {\n  constexpr MD() = default;\n  \n};") << out;
}

TEST(Rewriter, AttributeListsOfExplicitInstantiations) {
  EXPECT_EQ(rewrite("template[[host_name(\"k\")]]kernel void k<int>(int);"),
            "template __attribute__((host_name(\"k\")))__attribute__((annotate(\"m2v.kernel\"))) void k<int>(int);");
  EXPECT_EQ(rewrite("template [[host_name(\"k_f\")]] [[kernel]] decltype(k<float>) k<float>;"),
            "template __attribute__((host_name(\"k_f\"))) __attribute__((annotate(\"m2v.kernel\"))) "
            "decltype(k<float>) k<float>;");
  EXPECT_EQ(rewrite("extern template [[host_name(\"k\"), kernel]] void k<int>(int);"),
            "extern template __attribute__((host_name(\"k\"), annotate(\"m2v.kernel\"))) void k<int>(int);");
  std::string macro = "#define inst(n, t) template [[host_name(n)]] [[kernel]] decltype(k<t>) k<t>;";
  EXPECT_NE(rewrite(macro).find("__attribute__((host_name(n)))"), std::string::npos);
  // not an explicit instantiation: a template's own declaration, a dependent template name
  EXPECT_EQ(rewrite("template <int N> [[kernel]] void k();"), "template <int N> [[kernel]] void k();");
  EXPECT_EQ(rewrite("x.template f<1>([[maybe_unused]] int);").find("__attribute__"), std::string::npos);
}

TEST(Rewriter, StandardAttributesStay) {
  EXPECT_EQ(rewrite("[[maybe_unused]] int x;"), "[[maybe_unused]] int x;");
  EXPECT_EQ(rewrite("a[b[i]] = 1;"), "a[b[i]] = 1;");
}

TEST(Rewriter, ThreadgroupVariablesInBodiesBecomeStatic) {
  EXPECT_EQ(rewrite("void f() { threadgroup float a[32], b[4]; }"),
            "void f() { static threadgroup float a[32] = {}, b[4] = {}; }");
  // Pointers to threadgroup memory are ordinary locals.
  EXPECT_EQ(rewrite("void f() { threadgroup float* p = q; }"), "void f() { threadgroup float* p = q; }");
  // Parameters are not declarations in a body.
  EXPECT_EQ(rewrite("void f(threadgroup float* p) {}"), "void f(threadgroup float* p) {}");
}

TEST(Rewriter, AddressSpaceMethodQualifiersAreDropped) {
  EXPECT_EQ(rewrite("struct S { float get() const device { return 1; } };"),
            "struct S { float get() const        { return 1; } };");
}

TEST(Rewriter, VectorConstructorsKeepMetalSemantics) {
  EXPECT_EQ(rewrite("float4 v = float4(a.xy, 1, 2);"), "float4 v = __m2v::vec_ctor<float4>(a.xy, 1, 2);");
  EXPECT_EQ(rewrite("x = metal::half2(y);"), "x = __m2v::vec_ctor<metal::half2>(y);");
  EXPECT_EQ(rewrite("x = vec<T, 4>(y);"), "x = __m2v::vec_ctor<vec<T, 4>>(y);");
  EXPECT_EQ(rewrite("x = static_cast<float4>(h);"), "x = __m2v::vec_ctor<float4>(h);");
  EXPECT_EQ(rewrite("x = static_cast<float>(h);"), "x = static_cast<float>(h);");
}

TEST(Rewriter, TemplateArgumentListsBesideComparisons) {
  // the one bracket table pairs `<` with `>` within a statement: a less-than before or inside changes nothing
  EXPECT_EQ(rewrite("c = a < b; x = vec<T, 2>(y);"), "c = a < b; x = __m2v::vec_ctor<vec<T, 2>>(y);");
  EXPECT_EQ(rewrite("x = vec<T, (N > 2 ? 4 : 2)>(y);"), "x = __m2v::vec_ctor<vec<T, (N > 2 ? 4 : 2)>>(y);");
  EXPECT_EQ(rewrite("void f() { threadgroup vec<T, 2> a[4], b; }"),
            "void f() { static threadgroup vec<T, 2> a[4] = {}, b = {}; }");
}

TEST(Rewriter, ArrayParametersInAnAddressSpaceArePointers) {
  EXPECT_EQ(rewrite("int f(constant const int shape[4], device float* x) {"),
            "int f(constant const int * shape, device float* x) {");
  EXPECT_EQ(rewrite("g(x[3], y)"), "g(x[3], y)");                  // an expression, not a declaration
  EXPECT_EQ(rewrite("void h(int a[2]) {"), "void h(int a[2]) {");  // no address space: C++ already decays it
  // an annotation macro between the name and its bounds (uzu's DSL: OPTIONAL(cond))
  EXPECT_EQ(rewrite("void k(threadgroup float p OPTIONAL(A && n > 32)[NUM], uint i) {"),
            "void k(threadgroup float * p OPTIONAL(A && n > 32), uint i) {");
  EXPECT_EQ(rewrite("g(f(x)[3], y)"), "g(f(x)[3], y)");  // a call's result indexed, not a declaration
}

TEST(Rewriter, HalfAndBfloatConversions) {
  EXPECT_EQ(rewrite("b = bfloat(h) + static_cast<half>(b);"),
            "b = __m2v::scalar_cast<bfloat>(h) + __m2v::scalar_cast<half>(b);");
  EXPECT_EQ(rewrite("x = v.half(1);"), "x = v.half(1);");
}

TEST(Rewriter, HalfLiterals) {
  EXPECT_EQ(rewrite("h = 1.5h + 2H;"), "h = ((half)1.5) + ((half)2);");
  EXPECT_EQ(rewrite("u = 0x1Fh;"), "u = 0x1Fh;");  // not a half literal; clang will say what it is
}

TEST(Rewriter, CommentsAndStringsAreNotRewritten) {
  EXPECT_EQ(rewrite("// [[buffer(0)]]\n\"[[kernel]]\""), "// [[buffer(0)]]\n\"[[kernel]]\"");
}

TEST(Rewriter, LinesNeverMoveAndColumnsMapBack) {
  std::string src = "kernel void f(device float* x [[buffer(0)]],\n  uint i [[thread_position_in_grid\n]]) { bad; }\n";
  RewrittenSource r = rewriteMetalSource(src);
  EXPECT_EQ(std::count(r.text.begin(), r.text.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
  size_t badRewritten = r.text.find("bad");
  EXPECT_EQ(r.originalOffset(badRewritten), src.find("bad"));
  // A position inside a replacement maps to the start of what it replaced.
  size_t inAnnotation = r.text.find("m2v.kernel");
  EXPECT_EQ(r.originalOffset(inAnnotation), src.find("kernel"));
}

TEST(Rewriter, VectorTypeNames) {
  EXPECT_TRUE(isMetalVectorTypeName("float4"));
  EXPECT_TRUE(isMetalVectorTypeName("bfloat2"));
  EXPECT_TRUE(isMetalVectorTypeName("ushort3"));
  EXPECT_FALSE(isMetalVectorTypeName("float5"));
  EXPECT_FALSE(isMetalVectorTypeName("float"));
  EXPECT_FALSE(isMetalVectorTypeName("myfloat4"));
}

}  // namespace
}  // namespace m2v::frontend
