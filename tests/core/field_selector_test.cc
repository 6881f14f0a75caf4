// SPDX-License-Identifier: Apache-2.0

// apimachinery's field selector behaviour: parsing, escaping and matching.

#include "kcache/field_selector.h"

#include <gtest/gtest.h>

#include "core/field_terms.h"
#include "testing/objects.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {
TEST(FieldSelectorTest, Parse) {
  for (const char* s : {"x=a,y=b,z=c", "", "x!=a,y=b", R"(x=a||y\=b)", R"(x=a\=\=b)"}) {
    auto sel = FieldSelector::Parse(s);
    ASSERT_OK(sel) << s << ": " << sel.status();
    EXPECT_EQ(sel->String(), s);
  }
  for (const char* s : {"x=a||y=b", "x==a==b", "x=a,b", "x in (a)", "x in (a,b,c)", "x"}) {
    EXPECT_FALSE(FieldSelector::Parse(s).ok()) << s;
  }
  EXPECT_EQ(FieldSelector::Parse("x=a,a=x")->String(), FieldSelector::Parse("a=x,x=a")->String());
}

TEST(FieldSelectorTest, ErrorsSayWhatIsWrong) {
  EXPECT_EQ(FieldSelector::Parse("x=a,b").status().message(),
            "invalid selector: 'x=a,b'; can't understand 'b'");
  EXPECT_EQ(FieldSelector::Parse("x=a||y=b").status().message(),
            "invalid field selector: unescaped character in value: =");
  EXPECT_EQ(FieldSelector::Parse(R"(x=\a)").status().message(),
            R"(invalid field selector: invalid escape sequence: \a)");
}
TEST(FieldSelectorTest, Matches) {
  auto M = [](const char* s, const Fields& f) {
    auto sel = FieldSelector::Parse(s);
    EXPECT_OK(sel) << s;
    return sel->Matches(f);
  };
  EXPECT_TRUE(M("", {{"x", "y"}}));
  EXPECT_TRUE(M("x=y", {{"x", "y"}}));
  EXPECT_TRUE(M("x=y,z=w", {{"x", "y"}, {"z", "w"}}));
  EXPECT_TRUE(M("x!=y,z!=w", {{"x", "z"}, {"z", "a"}}));
  EXPECT_TRUE(M("notin=in", {{"notin", "in"}}));
  EXPECT_FALSE(M("x=y", {{"x", "z"}}));
  EXPECT_FALSE(M("x=y,z=w", {{"x", "w"}, {"z", "w"}}));
  EXPECT_FALSE(M("x!=y,z!=w", {{"x", "z"}, {"z", "w"}}));

  Fields f = {{"foo", "bar"}, {"baz", "blah"}, {"complex", R"(=value\,\)"}};
  EXPECT_TRUE(M("foo=bar", f));
  EXPECT_TRUE(M("baz=blah", f));
  EXPECT_TRUE(M("foo=bar,baz=blah", f));
  EXPECT_TRUE(M(R"(foo=bar,baz=blah,complex=\=value\\\,\\)", f));
  EXPECT_FALSE(M("foo=blah", f));
  EXPECT_FALSE(M("baz=bar", f));
  EXPECT_FALSE(M("foo=bar,foobar=bar,baz=blah", f));
}
TEST(FieldSelectorTest, Escaping) {
  struct {
    const char* raw;
    const char* escaped;
  } cases[] = {{"", ""},       {"a", "a"},      {"=", R"(\=)"},
               {",", R"(\,)"}, {"\\", R"(\\)"}, {R"(\=\,\)", R"(\\\=\\\,\\)"}};
  for (const auto& c : cases) {
    EXPECT_EQ(EscapeFieldValue(c.raw), c.escaped);
    EXPECT_EQ(*UnescapeFieldValue(c.escaped), c.raw);
  }
  for (const char* bad : {R"(\)", R"(\\\)", R"(\a)"}) {
    auto r = UnescapeFieldValue(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("invalid escape sequence"), std::string_view::npos);
  }
}
TEST(FieldSelectorTest, SplitTerms) {
  using V = std::vector<std::string>;
  EXPECT_EQ(fields::SplitTerms("a"), V{"a"});
  EXPECT_EQ(fields::SplitTerms("a=avalue,b=bvalue"), (V{"a=avalue", "b=bvalue"}));
  EXPECT_EQ(fields::SplitTerms("a=avalue,b==bvalue,c!=cvalue"),
            (V{"a=avalue", "b==bvalue", "c!=cvalue"}));
  EXPECT_EQ(fields::SplitTerms(""), V{});
  EXPECT_EQ(fields::SplitTerms("a=a,"), (V{"a=a", ""}));
  EXPECT_EQ(fields::SplitTerms(",a=a"), (V{"", "a=a"}));
  EXPECT_EQ(fields::SplitTerms(R"(k=\,,k2=v2)"), (V{R"(k=\,)", "k2=v2"}));
  EXPECT_EQ(fields::SplitTerms(R"(k=\\,k2=v2)"), (V{R"(k=\\)", "k2=v2"}));
  EXPECT_EQ(fields::SplitTerms(R"(k=\\\,,k2=v2)"), (V{R"(k=\\\,)", "k2=v2"}));
  EXPECT_EQ(fields::SplitTerms(R"(k=\a\b\)"), V{R"(k=\a\b\)"});
  EXPECT_EQ(fields::SplitTerms(R"(k=\)"), V{R"(k=\)"});
  EXPECT_EQ(fields::SplitTerms("함=수,목=록"), (V{"함=수", "목=록"}));
}

TEST(FieldSelectorTest, SplitTerm) {
  std::string l, o, r;
  ASSERT_TRUE(fields::SplitTerm("a=value", &l, &o, &r));
  EXPECT_EQ(l + "|" + o + "|" + r, "a|=|value");
  ASSERT_TRUE(fields::SplitTerm("b==value", &l, &o, &r));
  EXPECT_EQ(l + "|" + o + "|" + r, "b|==|value");
  ASSERT_TRUE(fields::SplitTerm("c!=value", &l, &o, &r));
  EXPECT_EQ(l + "|" + o + "|" + r, "c|!=|value");
  EXPECT_FALSE(fields::SplitTerm("", &l, &o, &r));
  EXPECT_FALSE(fields::SplitTerm("a", &l, &o, &r));
  ASSERT_TRUE(fields::SplitTerm(R"(k=\,)", &l, &o, &r));
  EXPECT_EQ(l + "|" + o + "|" + r, R"(k|=|\,)");
  ASSERT_TRUE(fields::SplitTerm(R"(k=\=)", &l, &o, &r));
  EXPECT_EQ(l + "|" + o + "|" + r, R"(k|=|\=)");
}

TEST(FieldSelectorTest, MatchesObjects) {
  ObjectPtr pod = testing::MakeObject(
      R"({"metadata":{"name":"a","namespace":"ns1"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}})");
  auto M = [&](const char* s) { return FieldSelector::Parse(s)->Matches(*pod); };
  EXPECT_TRUE(M("metadata.name=a"));
  EXPECT_TRUE(M("metadata.namespace=ns1,spec.nodeName=n1"));
  EXPECT_TRUE(M("status.phase!=Pending"));
  EXPECT_FALSE(M("status.phase=Pending"));
  EXPECT_TRUE(M("spec.missing="));  // absent reads as ""
  EXPECT_FALSE(M("spec.missing=x"));
  EXPECT_EQ(FieldSelector::Parse("metadata.name=a,x!=b")->RequiresExactMatch("metadata.name"), "a");
  EXPECT_EQ(FieldSelector::Parse("x!=b")->RequiresExactMatch("x"), std::nullopt);
}

}  // namespace
}  // namespace kcache
