// SPDX-License-Identifier: Apache-2.0

// apimachinery's label selector behaviour: parsing, matching, validation and strings.

#include "kcache/label_selector.h"

#include <gtest/gtest.h>

#include "core/label_parser.h"
#include "kcache/labels.h"
#include "testing/status_matchers.h"

namespace kcache {
namespace {

using labels::Lexer;
using labels::Parser;
using labels::Token;

std::string Canonical(std::string_view s) {
  auto sel = LabelSelector::Parse(s);
  EXPECT_OK(sel) << "\"" << s << "\": " << sel.status();
  return sel.ok() ? sel->String() : "<error>";
}

Requirement Req(std::string key, SelectionOperator op, std::vector<std::string> values = {}) {
  auto r = Requirement::Create(std::move(key), op, std::move(values));
  EXPECT_OK(r) << r.status();
  return r.ok() ? *r : Requirement();
}

bool Match(std::string_view selector, const Labels& labels) {
  auto sel = LabelSelector::Parse(selector);
  EXPECT_OK(sel) << selector << ": " << sel.status();
  return sel.ok() && sel->Matches(labels);
}
TEST(LabelSelectorTest, ValidStringsRoundTrip) {
  struct {
    const char* in;
    const char* out;
  } cases[] = {{"x=a,y=b,z=c", "x=a,y=b,z=c"},
               {"", ""},
               {"x!=a,y=b", "x!=a,y=b"},
               {"x=", "x="},
               {"x= ", "x="},
               {"x=,z= ", "x=,z="},
               {"x= ,z= ", "x=,z="},
               {"!x", "!x"},
               {"x>1", "x>1"},
               {"x>1,z<5", "x>1,z<5"}};
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.in), c.out) << c.in;
}
TEST(LabelSelectorTest, InvalidStrings) {
  for (const char* s : {"x=a||y=b", "x==a==b", "!x=a", "x<a"}) {
    EXPECT_FALSE(LabelSelector::Parse(s).ok()) << s;
  }
}
TEST(LabelSelectorTest, DeterministicOrder) {
  EXPECT_EQ(Canonical("x=a,a=x"), Canonical("a=x,x=a"));
  EXPECT_EQ(Canonical("x=a,a=x"), "a=x,x=a");
}
TEST(LabelSelectorTest, Everything) {
  EXPECT_TRUE(LabelSelector::Everything().Matches({{"x", "y"}}));
  EXPECT_TRUE(LabelSelector::Everything().Empty());
}
TEST(LabelSelectorTest, Matching) {
  EXPECT_TRUE(Match("", {{"x", "y"}}));
  EXPECT_TRUE(Match("x=y", {{"x", "y"}}));
  EXPECT_TRUE(Match("x=y,z=w", {{"x", "y"}, {"z", "w"}}));
  EXPECT_TRUE(Match("x!=y,z!=w", {{"x", "z"}, {"z", "a"}}));
  EXPECT_TRUE(Match("notin=in", {{"notin", "in"}}));
  EXPECT_TRUE(Match("x", {{"x", "z"}}));
  EXPECT_TRUE(Match("!x", {{"y", "z"}}));
  EXPECT_TRUE(Match("x>1", {{"x", "2"}}));
  EXPECT_TRUE(Match("x<1", {{"x", "0"}}));

  EXPECT_FALSE(Match("x=z", {}));
  EXPECT_FALSE(Match("x=y", {{"x", "z"}}));
  EXPECT_FALSE(Match("x=y,z=w", {{"x", "w"}, {"z", "w"}}));
  EXPECT_FALSE(Match("x!=y,z!=w", {{"x", "z"}, {"z", "w"}}));
  EXPECT_FALSE(Match("x", {{"y", "z"}}));
  EXPECT_FALSE(Match("!x", {{"x", "z"}}));
  EXPECT_FALSE(Match("x>1", {{"x", "0"}}));
  EXPECT_FALSE(Match("x<1", {{"x", "2"}}));

  Labels l = {{"foo", "bar"}, {"baz", "blah"}};
  EXPECT_TRUE(Match("foo=bar", l));
  EXPECT_TRUE(Match("baz=blah", l));
  EXPECT_TRUE(Match("foo=bar,baz=blah", l));
  EXPECT_FALSE(Match("foo=blah", l));
  EXPECT_FALSE(Match("baz=bar", l));
  EXPECT_FALSE(Match("foo=bar,foobar=bar,baz=blah", l));
}
TEST(LabelSelectorTest, FromSet) {
  Labels l = {{"foo", "bar"}, {"baz", "blah"}};
  for (const Labels& set : {Labels{}, Labels{{"foo", "bar"}}, Labels{{"baz", "blah"}},
                            Labels{{"foo", "bar"}, {"baz", "blah"}}}) {
    EXPECT_TRUE(LabelSelector::FromSet(set).Matches(l)) << LabelsToString(set);
  }
  EXPECT_FALSE(LabelSelector::FromSet({{"foo", "baz"}}).Matches(l));
  EXPECT_TRUE(LabelSelector::FromSet({}).Empty());
  EXPECT_TRUE(LabelSelector().Empty());
}
TEST(LexerTest, SingleTokens) {
  struct {
    const char* in;
    Token want;
  } cases[] = {{"", Token::kEndOfString},  {",", Token::kComma},      {"notin", Token::kNotIn},
               {"in", Token::kIn},         {"=", Token::kEquals},     {"==", Token::kDoubleEquals},
               {">", Token::kGreaterThan}, {"<", Token::kLessThan},   {"!", Token::kDoesNotExist},
               {"!=", Token::kNotEquals},  {"(", Token::kOpenPar},    {")", Token::kClosedPar},
               {"~", Token::kIdentifier},  {"||", Token::kIdentifier}};
  for (const auto& c : cases) {
    Lexer lexer(c.in);
    std::string lit;
    EXPECT_EQ(lexer.Lex(&lit), c.want) << c.in;
    EXPECT_EQ(lit, c.in);
  }
}
TEST(LexerTest, Sequences) {
  using T = Token;
  struct {
    const char* in;
    std::vector<Token> want;
  } cases[] = {
      {"key in ( value )", {T::kIdentifier, T::kIn, T::kOpenPar, T::kIdentifier, T::kClosedPar}},
      {"key notin ( value )",
       {T::kIdentifier, T::kNotIn, T::kOpenPar, T::kIdentifier, T::kClosedPar}},
      {"key in ( value1, value2 )",
       {T::kIdentifier, T::kIn, T::kOpenPar, T::kIdentifier, T::kComma, T::kIdentifier,
        T::kClosedPar}},
      {"key", {T::kIdentifier}},
      {"!key", {T::kDoesNotExist, T::kIdentifier}},
      {"()", {T::kOpenPar, T::kClosedPar}},
      {"x in (),y",
       {T::kIdentifier, T::kIn, T::kOpenPar, T::kClosedPar, T::kComma, T::kIdentifier}},
      {"== != (), = notin",
       {T::kDoubleEquals, T::kNotEquals, T::kOpenPar, T::kClosedPar, T::kComma, T::kEquals,
        T::kNotIn}},
      {"key>2", {T::kIdentifier, T::kGreaterThan, T::kIdentifier}},
      {"key<1", {T::kIdentifier, T::kLessThan, T::kIdentifier}},
  };
  for (const auto& c : cases) {
    Lexer lexer(c.in);
    std::vector<Token> got;
    std::string lit;
    for (Token t = lexer.Lex(&lit); t != Token::kEndOfString; t = lexer.Lex(&lit)) got.push_back(t);
    EXPECT_EQ(got, c.want) << c.in;
  }
}

TEST(LexerTest, UnknownSymbolRun) {
  Lexer lexer("=<");  // "=" then "<" are tokens; "=<" is not one token
  std::string lit;
  EXPECT_EQ(lexer.Lex(&lit), Token::kEquals);
  EXPECT_EQ(lexer.Lex(&lit), Token::kLessThan);
}
TEST(ParserTest, Operators) {
  for (const char* s : {"in", "=", "==", ">", "<", "notin", "!="}) {
    EXPECT_OK(Parser(s).ParseOperator()) << s;
  }
  EXPECT_EQ(Parser("!").ParseOperator().status().message(),
            "found '!', expected: in, notin, =, ==, !=, gt, lt");
  EXPECT_EQ(Parser("exists").ParseOperator().status().message(),
            "found 'exists', expected: in, notin, =, ==, !=, gt, lt");
  EXPECT_EQ(Parser("(").ParseOperator().status().message(),
            "found '(', expected: in, notin, =, ==, !=, gt, lt");
}
TEST(RequirementTest, Validation) {
  using Op = SelectionOperator;
  struct {
    std::string key;
    Op op;
    std::vector<std::string> values;
    const char* error;  // a substring of the error, or null for success
  } cases[] = {
      {"x1", Op::kIn, {}, "values: Invalid value: []"},
      {"x2", Op::kNotIn, {}, "values: Invalid value"},
      {"x3", Op::kIn, {"foo"}, nullptr},
      {"x4", Op::kNotIn, {"foo"}, nullptr},
      {"x5", Op::kEquals, {"bar", "foo"}, "values: Invalid value: [\"bar\",\"foo\"]"},
      {"x6", Op::kExists, {}, nullptr},
      {"x7", Op::kDoesNotExist, {}, nullptr},
      {"x8", Op::kExists, {"foo"}, "values: Invalid value: [\"foo\"]"},
      {"x9", Op::kIn, {"bar"}, nullptr},
      {"x10", Op::kIn, {"bar"}, nullptr},
      {"x11", Op::kGreaterThan, {"1"}, nullptr},
      {"x12", Op::kLessThan, {"6"}, nullptr},
      {"x13", Op::kGreaterThan, {}, "values: Invalid value"},
      {"x14", Op::kGreaterThan, {"bar"}, "values[0]: Invalid value: \"bar\""},
      {"x15", Op::kLessThan, {"bar"}, "values[0]: Invalid value"},
      {std::string(254, 'a'), Op::kExists, {}, "key: Invalid value"},
      {"x16", Op::kEquals, {std::string(254, 'a')}, "values[0][x16]: Invalid value"},
      {"x17", Op::kEquals, {"a b"}, "values[0][x17]: Invalid value"},
      {"x18", static_cast<Op>(99), {}, "operator: Unsupported value"},
  };
  for (const auto& c : cases) {
    auto r = Requirement::Create(c.key, c.op, c.values);
    if (!c.error) {
      EXPECT_OK(r) << c.key << ": " << r.status();
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find(c.error), std::string_view::npos)
        << c.key << ": " << r.status();
  }
}
TEST(LabelSelectorTest, StringOfConstructedSelectors) {
  using Op = SelectionOperator;
  auto S = [](std::vector<Requirement> r) {
    return LabelSelector::FromRequirements(std::move(r)).String();
  };
  EXPECT_EQ(
      S({Req("x", Op::kIn, {"abc", "def"}), Req("y", Op::kNotIn, {"jkl"}), Req("z", Op::kExists)}),
      "x in (abc,def),y notin (jkl),z");
  EXPECT_EQ(S({Req("x", Op::kNotIn, {"abc", "def"}), Req("y", Op::kNotEquals, {"jkl"}),
               Req("z", Op::kDoesNotExist)}),
            "x notin (abc,def),y!=jkl,!z");
  EXPECT_EQ(S({Req("x", Op::kIn, {"abc", "def"}), Requirement()}), "x in (abc,def),");
  EXPECT_EQ(S({Req("x", Op::kNotIn, {"abc"}), Req("y", Op::kIn, {"jkl", "mno"}),
               Req("z", Op::kNotIn, {""})}),
            "x notin (abc),y in (jkl,mno),z notin ()");
  EXPECT_EQ(S({Req("x", Op::kEquals, {"abc"}), Req("y", Op::kDoubleEquals, {"jkl"}),
               Req("z", Op::kNotEquals, {"a"}), Req("z", Op::kExists)}),
            "x=abc,y==jkl,z!=a,z");
  EXPECT_EQ(
      S({Req("x", Op::kGreaterThan, {"2"}), Req("y", Op::kLessThan, {"8"}), Req("z", Op::kExists)}),
      "x>2,y<8,z");
}
TEST(RequirementTest, SelectorMatching) {
  using Op = SelectionOperator;
  auto M = [](const Labels& l, std::vector<Requirement> r) {
    return LabelSelector::FromRequirements(std::move(r)).Matches(l);
  };
  Labels xy = {{"x", "foo"}, {"y", "baz"}};
  EXPECT_FALSE(M(xy, {Requirement()}));
  EXPECT_TRUE(M(xy, {Req("x", Op::kIn, {"foo"}), Req("y", Op::kNotIn, {"alpha"})}));
  EXPECT_FALSE(M(xy, {Req("x", Op::kIn, {"foo"}), Req("y", Op::kIn, {"alpha"})}));
  Labels y_empty = {{"y", ""}};
  EXPECT_TRUE(M(y_empty, {Req("x", Op::kNotIn, {""}), Req("y", Op::kExists)}));
  EXPECT_TRUE(M(y_empty, {Req("x", Op::kDoesNotExist), Req("y", Op::kExists)}));
  EXPECT_FALSE(M(y_empty, {Req("x", Op::kNotIn, {""}), Req("y", Op::kDoesNotExist)}));
  EXPECT_FALSE(M({{"y", "baz"}}, {Req("x", Op::kIn, {""})}));
  EXPECT_TRUE(M({{"z", "2"}}, {Req("z", Op::kGreaterThan, {"1"})}));
  EXPECT_FALSE(M({{"z", "v2"}}, {Req("z", Op::kGreaterThan, {"1"})}));
}
TEST(LabelSelectorTest, ParserAcceptanceAndCanonicalForm) {
  struct {
    const char* in;
    const char* out;
  } valid[] = {
      {"", ""},
      {"\rx", "x"},
      {"this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"},
      {"this-is-another-dns.domain.com/key-with-dash in (so,what)",
       "this-is-another-dns.domain.com/key-with-dash in (so,what)"},
      {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
       "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"},
      {"foo  in\t (abc)", "foo in (abc)"},
      {"x notin\n (abc)", "x notin (abc)"},
      {"x  notin\t\t(abc,def)", "x notin (abc,def)"},
      {"x in (abc,def)", "x in (abc,def)"},
      {"x in (abc,)", "x in (,abc)"},
      {"x in (abc,abc)", "x in (abc)"},
      {"x in ()", "x in ()"},
      {"x in (a,,)", "x in (,a)"},
      {"x in (a,,,)", "x in (,a)"},
      {"x in (a,,,,,,)", "x in (,a)"},
      {"x in (a,,a,,a,,a,,)", "x in (,a)"},
      {"x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"},
      {"x,y in (a)", "x,y in (a)"},
      {"x=a", "x=a"},
      {"x>1", "x>1"},
      {"x<7", "x<7"},
      {"x=a,y!=b", "x=a,y!=b"},
      {"x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"},
      {"x notin ( )", "x notin ()"},
      {"x notin (, a)", "x notin (,a)"},
      {"a ", "a"},
      {"a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"},
  };
  for (const auto& c : valid) EXPECT_EQ(Canonical(c.in), c.out) << c.in;
  auto in_values = LabelSelector::Parse("x in (abc,)");
  ASSERT_OK(in_values);
  EXPECT_EQ(in_values->requirements()[0].values(), (std::vector<std::string>{"", "abc"}));

  for (const char* s : {"x=a||y=b", "x,,y", ",x,y", "x nott in (y)", "a in (xyz),",
                        "a in (xyz)b notin ()", "a in (xyz abc)", "a notin(", "a (", "("}) {
    EXPECT_FALSE(LabelSelector::Parse(s).ok()) << s;
  }
}

TEST(LabelSelectorTest, ParseErrorsSayWhatIsWrong) {
  EXPECT_EQ(LabelSelector::Parse("x,,y").status().message(),
            "found ',', expected: identifier after ','");
  EXPECT_EQ(LabelSelector::Parse("a in (xyz)b notin ()").status().message(),
            "found 'b', expected: ',' or 'end of string'");
  auto bad_key = LabelSelector::Parse("-x=a");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.status().message().substr(0, 57),
            "unable to parse requirement: key: Invalid value: \"-x\": na");
}
TEST(LabelSelectorTest, AddKeepsKeyOrder) {
  using Op = SelectionOperator;
  LabelSelector s = LabelSelector().Add(Req("key", Op::kIn, {"value"}));
  EXPECT_EQ(s.String(), "key in (value)");
  EXPECT_EQ(s.Add(Req("key2", Op::kEquals, {"value2"})).String(), "key in (value),key2=value2");
  EXPECT_EQ(LabelSelector().Add(Req("b", Op::kExists)).Add(Req("a", Op::kExists)).String(), "a,b");
}
TEST(LabelSelectorTest, SetString) {
  EXPECT_EQ(LabelSelector::FromSet({}).String(), "");
  EXPECT_EQ(LabelSelector::FromSet({{"app", "foo"}}).String(), "app=foo");
  EXPECT_EQ(LabelSelector::FromSet({{"app", "foo"}, {"a", "b"}}).String(), "a=b,app=foo");
}
TEST(LabelSelectorTest, RequiresExactMatch) {
  using Op = SelectionOperator;
  auto one = [](std::vector<Requirement> r) {
    return LabelSelector::FromRequirements(std::move(r));
  };
  EXPECT_EQ(one({Req("key", Op::kIn, {"value"})}).RequiresExactMatch("key"), "value");
  EXPECT_EQ(one({Req("key", Op::kIn, {"value", "value2"})}).RequiresExactMatch("key"),
            std::nullopt);
  EXPECT_EQ(one({Req("key", Op::kIn, {"value", "value1"}), Req("key2", Op::kIn, {"value2"})})
                .RequiresExactMatch("key2"),
            "value2");
  EXPECT_EQ(one({Req("key", Op::kEquals, {"value"})}).RequiresExactMatch("key"), "value");
  EXPECT_EQ(one({Req("key", Op::kDoubleEquals, {"value"})}).RequiresExactMatch("key"), "value");
  EXPECT_EQ(one({Req("key", Op::kNotEquals, {"value"})}).RequiresExactMatch("key"), std::nullopt);
  EXPECT_EQ(one({Req("key", Op::kIn, {"value"}), Req("key2", Op::kIn, {"value2"})})
                .RequiresExactMatch("key"),
            "value");
}
TEST(LabelSelectorTest, ValidatedFromSet) {
  auto ok = LabelSelector::ValidatedFromSet({{"key", "val"}});
  ASSERT_OK(ok);
  EXPECT_EQ(ok->String(), "key=val");
  auto bad = LabelSelector::ValidatedFromSet(
      {{"Key", "axahm2EJ8Phiephe2eixohbee9eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("values[0][Key]: Invalid value"), std::string_view::npos)
      << bad.status();
}
TEST(LabelSelectorTest, MatchesNothing) {
  EXPECT_TRUE(LabelSelector::Nothing().MatchesNothing());
  EXPECT_FALSE(LabelSelector::Nothing().Matches({}));
  EXPECT_FALSE(LabelSelector::Nothing().Empty());
  EXPECT_FALSE(LabelSelector::Everything().MatchesNothing());
  EXPECT_FALSE(LabelSelector::FromSet({}).MatchesNothing());
  EXPECT_FALSE(LabelSelector::FromSet({{"key", "value"}}).MatchesNothing());
  for (const char* s : {"", "a", "!a", "a=b", "a!=b", "a in (b)", "a notin (b)", "a,!a", "a=b,a!=b",
                        "a in (b),a notin (b)"}) {
    auto sel = LabelSelector::Parse(s);
    ASSERT_OK(sel) << s;
    EXPECT_FALSE(sel->MatchesNothing()) << s;
  }
}
TEST(LabelsTest, SetHelpers) {
  EXPECT_EQ(LabelsToString({{"foo", "bar"}, {"baz", "qup"}}), "baz=qup,foo=bar");
  EXPECT_TRUE(LabelsConflict({{"env", "test"}}, {{"env", "dev"}}));
  EXPECT_FALSE(LabelsConflict({{"env", "test"}}, {{"infra", "true"}, {"env", "test"}}));

  struct {
    const char* in;
    Labels want;
  } valid[] = {
      {"", {}},
      {"x=a", {{"x", "a"}}},
      {"x=a,y=b,z=c", {{"x", "a"}, {"y", "b"}, {"z", "c"}}},
      {" x = a , y = b , z = c ", {{"x", "a"}, {"y", "b"}, {"z", "c"}}},
      {"color=green, env=test, service=front",
       {{"color", "green"}, {"env", "test"}, {"service", "front"}}},
  };
  for (const auto& c : valid) {
    auto got = ConvertSelectorToLabelsMap(c.in);
    ASSERT_OK(got) << c.in << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.in;
  }
  for (const char* s :
       {",", "x", "x,y", "x=$y", "x!=y", "x==y", "x=a||y=b", "x in (y)", "x notin (y)", "x y"}) {
    EXPECT_FALSE(ConvertSelectorToLabelsMap(s).ok()) << s;
  }
}

}  // namespace
}  // namespace kcache
