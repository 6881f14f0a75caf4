// SPDX-License-Identifier: Apache-2.0

// YAML as kubectl -o yaml writes it (Go's yaml.v2): the expected texts are
// what kubectl 1.32 printed for the same values.
#include "tools/kcache/kubectl/yaml.h"

#include <gtest/gtest.h>

namespace kcache::tool {
namespace {

std::string Yaml(const nlohmann::json& doc) {
  std::string out;
  AppendYaml(doc, &out);
  return out;
}

TEST(YamlTest, NestsAsKubectlDoes) {
  nlohmann::json pod = nlohmann::json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "web-0", "labels": {"app": "web"}, "annotations": {}},
    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}], "args": ["a", "b"]}],
             "matrix": [[1, 2], []], "ratio": 0.25, "big": 1e21, "none": null}})");
  EXPECT_EQ(Yaml(pod),
            "apiVersion: v1\n"
            "kind: Pod\n"
            "metadata:\n"
            "  annotations: {}\n"
            "  labels:\n"
            "    app: web\n"
            "  name: web-0\n"
            "spec:\n"
            "  big: 1e+21\n"
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
            "  - []\n"
            "  none: null\n"
            "  ratio: 0.25\n");
}

TEST(YamlTest, QuotesOnlyWhatWouldReadBackAsSomethingElse) {
  nlohmann::json doc = {{"a", "123"},
                        {"b", "true"},
                        {"c", ""},
                        {"d", "x: y"},
                        {"e", "-x"},
                        {"f", "-"},
                        {"g", "2025-01-01T00:00:00Z"},
                        {"h", "plain"},
                        {"i", "No"},
                        {"j", "a #b"},
                        {"k", " pad"},
                        {"l", "pad "},
                        {"m", "1:20"},
                        {"n", "0777"},
                        {"o", "1e3"},
                        {"p", "~"},
                        {"q", "*x"},
                        {"r", "a:b"},
                        {"s", "it's: here"},
                        {"t", "tab\there"},
                        {"u", "ok \xF0\x9F\x98\x80"},
                        {"v", "1.2.3"},
                        {"w", "2025-13-01"},
                        {"x", "0x1F"},
                        {"y", "y"}};
  EXPECT_EQ(Yaml(doc),
            "a: \"123\"\nb: \"true\"\nc: \"\"\nd: 'x: y'\ne: -x\nf: '-'\n"
            "g: \"2025-01-01T00:00:00Z\"\nh: plain\ni: \"No\"\nj: 'a #b'\nk: ' pad'\n"
            "l: 'pad '\nm: \"1:20\"\n\"n\": \"0777\"\no: \"1e3\"\np: \"~\"\nq: '*x'\nr: a:b\n"
            "s: 'it''s: here'\nt: \"tab\\there\"\nu: \"ok \\U0001F600\"\nv: 1.2.3\n"
            "w: 2025-13-01\nx: \"0x1F\"\n\"y\": \"y\"\n");
}

TEST(YamlTest, MultilineStringsAreLiteralBlocks) {
  nlohmann::json doc = {{"strip", "a\nb"},    {"clip", "a\nb\n"},       {"keep", "a\n\n"},
                        {"indent", "  x\ny"}, {"list", {"one\ntwo\n"}}, {"trailing", "a \nb"}};
  EXPECT_EQ(Yaml(doc),
            "clip: |\n  a\n  b\n"
            "indent: |2-\n    x\n  y\n"
            "keep: |+\n  a\n\n"
            "list:\n- |\n  one\n  two\n"
            "strip: |-\n  a\n  b\n"
            "trailing: \"a \\nb\"\n");
}

TEST(YamlTest, FoldsLongStringsPastColumnEighty) {
  nlohmann::json doc = {
      {"metadata",
       {{"annotations",
         {{"long-plain",
           "This annotation is a long plain sentence that goes well past eighty columns so "
           "that we can see whether kubectl folds it"},
          {"long-single",
           "Contains: a colon and space, then continues for long enough to pass the eighty "
           "column mark by a fair bit"},
          {"long-double",
           "tab\there and the line goes on and on past the eighty column limit to see folding "
           "of quoted text"}}}}}};
  EXPECT_EQ(Yaml(doc),
            "metadata:\n"
            "  annotations:\n"
            "    long-double: \"tab\\there and the line goes on and on past the eighty column "
            "limit\n"
            "      to see folding of quoted text\"\n"
            "    long-plain: This annotation is a long plain sentence that goes well past "
            "eighty\n"
            "      columns so that we can see whether kubectl folds it\n"
            "    long-single: 'Contains: a colon and space, then continues for long enough to "
            "pass\n"
            "      the eighty column mark by a fair bit'\n");
}

TEST(YamlTest, KeysInYamlV2NaturalOrder) {
  EXPECT_TRUE(YamlKeyLess("a2", "a10"));
  EXPECT_FALSE(YamlKeyLess("a10", "a2"));
  EXPECT_TRUE(YamlKeyLess("app", "app.kubernetes.io/name"));
  EXPECT_TRUE(YamlKeyLess("UPPER", "lower"));
  EXPECT_TRUE(YamlKeyLess("a.b", "ab"));  // punctuation before letters
  EXPECT_TRUE(YamlKeyLess("tls.crt", "tls.key"));
}

TEST(YamlTest, ListItemsOneAtATime) {
  std::string out;
  AppendYamlItem({{"name", "a"}, {"data", {{"k", "v"}}}}, &out);
  EXPECT_EQ(out, "- data:\n    k: v\n  name: a\n");
}

}  // namespace
}  // namespace kcache::tool
