// backend-capabilities / issue "tables that cannot drift": the tables in
// docs/capabilities.md are rendered from the descriptors; this test fails
// when they differ (regenerate with
// `strideweave caps --render-docs docs/capabilities.md`).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

#include <fstream>
#include <sstream>

namespace {

using namespace strideweave;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CapabilityTables, RenderedDocsMatchTheDescriptors) {
  const std::string doc = read_file(std::string(STRIDEWEAVE_SOURCE_DIR) + "/docs/capabilities.md");
  ASSERT_FALSE(doc.empty());
  for (const ShippedCarrier& c : shipped_carriers()) {
    const CarrierClass cls = c.cls;
    const std::string name(c.name);
    const std::string begin = "<!-- BEGIN CAPABILITIES: " + name + " -->\n";
    const std::string end = "<!-- END CAPABILITIES: " + name + " -->";
    const auto b = doc.find(begin);
    ASSERT_NE(b, std::string::npos) << "docs/capabilities.md has no table for " << name;
    const auto e = doc.find(end, b);
    ASSERT_NE(e, std::string::npos);
    EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), render_capability_table(cls))
        << "docs/capabilities.md is out of date for " << name
        << ": run strideweave caps --render-docs docs/capabilities.md";
  }
  EXPECT_EQ(render_capability_tables_into(doc), doc);
}

TEST(CapabilityTables, EveryRenderedRowIsOneDescriptorEntry) {
  for (const ShippedCarrier& c : shipped_carriers()) {
    const CarrierClass cls = c.cls;
    const std::string_view name = c.name;
    const std::string table = render_capability_table(cls);
    const auto rows = static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')) - 2;  // minus header lines
    EXPECT_EQ(rows, capabilities_for_carrier_class(cls).size()) << name;
    EXPECT_EQ(rows, kernel_table(cls)->plans().size()) << name;
  }
}

}  // namespace

namespace {

using namespace strideweave;

// A caller-provided output accepts the documented result shape of matmul on a vector
// (the kernel's promoted axis is internal) and returns the output itself.
TEST(ExecutionAxesOutputs, MatmulVectorResultIntoItsDocumentedShape) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3});
  const Tensor v = make_tensor<CPU>({1.0f, 0.0f, 1.0f}, Shape{3});
  const Tensor out = make_tensor<CPU>({0.0f, 0.0f}, Shape{2});
  const Tensor r = matmul(a, v, std::nullopt, into(out));
  EXPECT_TRUE(r.is(out));
  EXPECT_EQ(TypedTensor<float>(out).values(), (std::vector<float>{6, 8}));
}

// A broadcast view maps several elements to one slot: not an output.
TEST(ExecutionAxesOutputs, BroadcastViewIsNotAnOutput) {
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f}, Shape{2});
  const Tensor one = make_tensor<CPU>({0.0f}, Shape{1});
  const Tensor wide = one.broadcast_to(Shape{2});
  EXPECT_THROW_EXACTLY(add(a, a, into(wide)), ValueError);
  EXPECT_EQ(TypedTensor<float>(one).values(), (std::vector<float>{0.0f}));
  EXPECT_EQ(one.carrier()->version(), 0u);
}

}  // namespace
