// backend-capabilities / issue "tables that cannot drift": the tables in
// docs/capabilities.md are rendered from the descriptors; this test fails
// when they differ (regenerate with
// `strideweave caps --render-docs docs/capabilities.md`).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

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
  for (const auto& [cls, name] : shipped_kernel_classes()) {
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
  for (const auto& [cls, name] : shipped_kernel_classes()) {
    const std::string table = render_capability_table(cls);
    const auto rows = static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')) - 2;  // minus header lines
    EXPECT_EQ(rows, capabilities_for_carrier_class(cls).size()) << name;
    EXPECT_EQ(rows, kernel_table(cls)->plans().size()) << name;
  }
}

}  // namespace
