#include "tools/kcache/printers.h"
#include "testing/status_matchers.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kcache::tool {
namespace {

std::string Yaml(const nlohmann::json& doc) {
  std::ostringstream out;
  PrintYaml(doc, out);
  return out.str();
}

TEST(PrintYamlTest, NestsAsKubectlDoes) {
  nlohmann::json pod = nlohmann::json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "web-0", "labels": {"app": "web"}, "annotations": {}},
    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}], "args": ["a", "b"]}],
             "matrix": [[1, 2], []]}})");
  EXPECT_EQ(Yaml(pod),
            "apiVersion: v1\n"
            "kind: Pod\n"
            "metadata:\n"
            "  annotations: {}\n"
            "  labels:\n"
            "    app: web\n"
            "  name: web-0\n"
            "spec:\n"
            "  containers:\n"
            "  - args:\n"
            "    - a\n"
            "    - b\n"
            "    name: c\n"
            "    ports:\n"
            "    - containerPort: 80\n"
            "  matrix:\n"
            "  - - 1\n"
            "    - 2\n"
            "  - []\n");
}

// Strings YAML would read as something else are quoted.
TEST(PrintYamlTest, QuotesStringsThatWouldChangeType) {
  nlohmann::json doc = {{"a", "123"},
                        {"b", "true"},
                        {"c", ""},
                        {"d", "x: y"},
                        {"e", "-x"},
                        {"f", "line\nnext"},
                        {"g", "2025-01-01T00:00:00Z"},
                        {"h", "plain"},
                        {"i", 5},
                        {"j", nullptr},
                        {"k", "No"},
                        {"l", "a #b"},
                        {"m", " pad"}};
  EXPECT_EQ(Yaml(doc),
            "a: \"123\"\nb: \"true\"\nc: \"\"\nd: \"x: y\"\ne: \"-x\"\nf: \"line\\nnext\"\n"
            "g: \"2025-01-01T00:00:00Z\"\nh: plain\ni: 5\nj: null\nk: \"No\"\nl: \"a #b\"\nm: \" "
            "pad\"\n");
}

TEST(ParseFieldPathTest, AcceptsKubectlJsonPaths) {
  nlohmann::json doc = {{"metadata", {{"name", "x"}}},
                        {"spec", {{"containers", {{{"image", "nginx"}}}}}}};
  for (const char* p : {"{.metadata.name}", ".metadata.name", "metadata.name"}) {
    auto ptr = ParseFieldPath(p);
    ASSERT_OK(ptr) << p;
    EXPECT_EQ(doc[*ptr], "x") << p;
  }
  auto image = ParseFieldPath("{.spec.containers[0].image}");
  ASSERT_OK(image);
  EXPECT_EQ(doc[*image], "nginx");
  EXPECT_FALSE(ParseFieldPath("{.spec.containers[*].image}").ok());
  EXPECT_FALSE(ParseFieldPath("{..x}").ok());
}

TEST(PrintTableTest, AlignsByCharactersNotBytes) {
  std::ostringstream out;
  PrintTable({{"NAME", "AGE"}, {"└─Pod/a", "1s"}, {"Deployment/web", "2d"}}, out);
  EXPECT_EQ(out.str(), "NAME             AGE\n└─Pod/a          1s\nDeployment/web   2d\n");
}

}  // namespace
}  // namespace kcache::tool
