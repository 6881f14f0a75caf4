// SPDX-License-Identifier: Apache-2.0

// kubectl's JSONPath dialect: the cases of client-go's util/jsonpath tests,
// over a document of our own.
#include "tools/kcache/kubectl/jsonpath.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kcache::tool {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

const nlohmann::json& Store() {
  static const nlohmann::json doc = nlohmann::json::parse(R"({
    "kind": "List",
    "items": [
      {"metadata": {"name": "a", "labels": {"app": "web", "app.kubernetes.io/name": "x"}},
       "spec": {"replicas": 3, "ratio": 0.5, "containers": [{"name": "c1", "image": "i1"},
                                                            {"name": "c2", "image": "i2"}]},
       "status": {"ready": true}},
      {"metadata": {"name": "b", "labels": {"app": "db"}},
       "spec": {"replicas": 1, "containers": [{"name": "c3", "image": "i3"}]},
       "status": {"ready": false, "note": null}}
    ]})");
  return doc;
}

std::string Exec(const std::string& tmpl, const nlohmann::json& doc = Store()) {
  auto path = JsonPath::Parse(tmpl);
  EXPECT_OK(path) << tmpl;
  if (!path.ok()) return "<parse error>";
  std::string out;
  Status st = path->Execute(doc, &out);
  EXPECT_OK(st) << tmpl;
  return out;
}

TEST(JsonPathTest, FieldsIndexesSlicesAndWildcards) {
  EXPECT_EQ(Exec("{.kind}"), "List");
  EXPECT_EQ(Exec("{.items[*].metadata.name}"), "a b");
  EXPECT_EQ(Exec("{.items[0].spec.containers[-1].name}"), "c2");
  EXPECT_EQ(Exec("{.items[0].spec.containers[0:2].image}"), "i1 i2");
  EXPECT_EQ(Exec("{.items[0].spec.containers[::2].image}"), "i1");
  EXPECT_EQ(Exec("{.items[0].spec.containers[-1:].name}"), "c2");
  EXPECT_EQ(Exec("{.items[*]['metadata']['name']}"), "a b");
  EXPECT_EQ(Exec("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}"), "x");
  EXPECT_EQ(Exec("{.items[0].metadata.labels.*}"), "web x");
  EXPECT_EQ(Exec("{.items[0].spec.containers[0,1].name}"), "c1 c2");
  EXPECT_EQ(Exec("{$.items[1].spec.replicas}"), "1");
  EXPECT_EQ(Exec("{.items[0].spec.ratio}"), "0.5");
  EXPECT_EQ(Exec("{.items[1].status.note}"), "<nil>");
}

TEST(JsonPathTest, ObjectsAndArraysPrintAsCompactJson) {
  EXPECT_EQ(Exec("{.items[1].metadata.labels}"), R"({"app":"db"})");
  EXPECT_EQ(Exec("{.items[1].spec.containers}"), R"([{"image":"i3","name":"c3"}])");
  EXPECT_EQ(Exec("{.x}", {{"x", "<&>"}}), "<&>");
  EXPECT_EQ(Exec("{.x}", {{"x", {"<&>"}}}), R"(["\u003c\u0026\u003e"])");
}

TEST(JsonPathTest, FiltersCompareLikeGoTemplates) {
  EXPECT_EQ(Exec("{.items[?(@.metadata.name==\"b\")].spec.replicas}"), "1");
  EXPECT_EQ(Exec("{.items[?(@.spec.replicas>1)].metadata.name}"), "a");
  EXPECT_EQ(Exec("{.items[?(@.spec.replicas<=3)].metadata.name}"), "a b");
  EXPECT_EQ(Exec("{.items[?(@.status.ready==true)].metadata.name}"), "a");
  EXPECT_EQ(Exec("{.items[?(@.spec.ratio)].metadata.name}"), "a");
  EXPECT_EQ(Exec("{.items[?(@.metadata.name!='a')].metadata.name}"), "b");
  auto path = JsonPath::Parse("{.items[?(@.spec.replicas==\"3\")].metadata.name}");
  ASSERT_OK(path);
  std::string out;
  EXPECT_THAT(path->Execute(Store(), &out),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("incompatible types")));
}

TEST(JsonPathTest, RangeAndLiterals) {
  EXPECT_EQ(Exec("{range .items[*]}{.metadata.name}:{.spec.replicas}{\"\\n\"}{end}"), "a:3\nb:1\n");
  EXPECT_EQ(Exec("{range .items[*]}[{range .spec.containers[*]}{.name},{end}]{end}"),
            "[c1,c2,][c3,]");
  EXPECT_EQ(Exec("names: {.items[*].metadata.name}!"), "names: a b!");
  EXPECT_EQ(Exec("{..image}"), "i1 i2 i3");
}

TEST(JsonPathTest, MissingKeysGiveNothingUnlessRequired) {
  EXPECT_EQ(Exec("{.items[*].spec.missing}"), "");
  auto path = JsonPath::Parse("{.missing}");
  ASSERT_OK(path);
  path->set_allow_missing_keys(false);
  std::string out;
  EXPECT_THAT(path->Execute(Store(), &out),
              StatusIs(StatusCode::kNotFound, "missing is not found"));
}

TEST(JsonPathTest, JsonOutput) {
  auto path = JsonPath::Parse("{.items[*].metadata.name}");
  ASSERT_OK(path);
  std::string out;
  ASSERT_OK(path->Execute(Store(), &out, /*as_json=*/true));
  EXPECT_EQ(out, "[\n    \"a\",\n    \"b\"\n]\n");
}

TEST(JsonPathTest, ErrorsAsKubectlWordsThem) {
  EXPECT_THAT(JsonPath::Parse("{.a").status(),
              StatusIs(StatusCode::kInvalidArgument, "unclosed action"));
  EXPECT_THAT(JsonPath::Parse("{.a[1}").status(),
              StatusIs(StatusCode::kInvalidArgument, "unterminated array"));
  EXPECT_THAT(JsonPath::Parse("{.a[x]}").status(),
              StatusIs(StatusCode::kInvalidArgument, "invalid array index x"));
  EXPECT_THAT(
      JsonPath::Parse("{#}").status(),
      StatusIs(StatusCode::kInvalidArgument, "unrecognized character in action: U+0023 '#'"));
  EXPECT_THAT(JsonPath::Parse("{end}").status(),
              StatusIs(StatusCode::kInvalidArgument, "not in range, nothing to end"));
  EXPECT_THAT(JsonPath::Parse("{.a[?(@.b==1}").status(),
              StatusIs(StatusCode::kInvalidArgument, "unterminated filter"));
  auto out_of_range = JsonPath::Parse("{.items[5]}");
  ASSERT_OK(out_of_range);
  std::string out;
  EXPECT_THAT(
      out_of_range->Execute(Store(), &out),
      StatusIs(StatusCode::kInvalidArgument, "array index out of bounds: index 5, length 2"));
}

TEST(JsonPathTest, RelaxedExpressions) {
  for (const char* e : {"a.b", ".a.b", "{a.b}", "{.a.b}"}) {
    auto r = JsonPath::Relaxed(e);
    ASSERT_OK(r) << e;
    EXPECT_EQ(*r, "{.a.b}") << e;
  }
  EXPECT_FALSE(JsonPath::Relaxed("{a}{b}").ok());
}

}  // namespace
}  // namespace kcache::tool
