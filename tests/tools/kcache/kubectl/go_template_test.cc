// SPDX-License-Identifier: Apache-2.0

// kubectl's -o go-template engine on its own. Each expected output here was
// printed by kubectl 1.32 for the same template and data; the golden test
// (tests/integration/golden/forms.txt) holds the whole engine to kubectl
// against the real kube-apiserver, over 100 templates.

#include "tools/kcache/kubectl/go_template.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kcache::tool {
namespace {

using json = nlohmann::json;

const json& Data() {
  static const json kData = json::parse(R"({
    "kind": "Pod",
    "metadata": {"name": "web-1", "labels": {"app": "web", "tier": "front"}, "generation": 1,
                 "nothing": null},
    "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}],
             "size": 3, "ratio": 0.25, "big": 1000000, "tiny": 0.00001},
    "data": {"password": "aHVudGVyMg=="}
  })");
  return kData;
}

std::string Render(const std::string& text) {
  StatusOr<GoTemplate> t = GoTemplate::Parse(text);
  EXPECT_OK(t) << text;
  if (!t.ok()) return "";
  std::string out;
  Status st = t->Execute(Data(), &out);
  EXPECT_OK(st) << text;
  return out;
}

TEST(GoTemplateTest, PrintsWhatKubectlPrints) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"{{.metadata.name}}", "web-1"},
      // A missing key is no value, and so are its fields; so is null.
      {"{{.metadata.nope}}|{{.metadata.nope.deeper}}|{{.metadata.nothing}}",
       "<no value>|<no value>|<no value>"},
      {R"({{index .metadata.labels "app"}}|{{index .metadata.labels "nope"}})", "web|<no value>"},
      {"{{.metadata.labels}}", "map[app:web tier:front]"},
      {"{{range $k, $v := .metadata.labels}}{{$k}}={{$v}};{{end}}", "app=web;tier=front;"},
      {"{{range $i, $c := .spec.containers}}{{$i}}:{{$c.name}} {{end}}", "0:web 1:log "},
      {"{{range .spec.nope}}x{{else}}none{{end}}", "none"},
      {"{{range .spec.containers -}} {{.name}} {{- end}}", "weblog"},
      {"{{- range .spec.containers }}  [{{ .name -}}  ]  {{ end -}}", "  [web]    [log]  "},
      {"{{.spec.size}} {{.spec.ratio}} {{.spec.big}} {{.spec.tiny}}", "3 0.25 1000000 1e-05"},
      {"{{1e6}} {{3.0}} {{0x1F}} {{-5}} {{1.5}} {{true}}", "1e+06 3 31 -5 1.5 true"},
      {"{{if eq .spec.size 3}}three{{else if gt .spec.size 10}}big{{end}}", "three"},
      {R"({{printf "%d %s" 1}}|{{printf "%d" 1 2}}|{{printf "%z" 3}})",
       "1 %!s(MISSING)|1%!(EXTRA int=2)|%!z(int=3)"},
      {R"({{printf "%s|%d" .spec.size .spec.ratio}})", "%!s(int64=3)|%!d(float64=0.25)"},
      {R"({{printf "%6.2f|%-8v|%8v" 3.14159 "ab" 12}})", "  3.14|ab      |      12"},
      {R"({{printf "%f" .spec.nope}})", "%!f(<nil>)"},
      {"{{print}}|{{print nil}}|{{println}}|", "|<nil>|\n|"},
      {R"({{print 1 2 "a" "b" 3}})", "1 2ab3"},
      {R"({{and 1 0 2}}|{{or .metadata.nope "dflt"}}|{{not .metadata.nope}})", "0|dflt|true"},
      {R"({{"a\u00e9\x41"}} {{printf "%q" "tab\there\"q"}})",
       "a\xc3\xa9"
       "A \"tab\\there\\\"q\""},
      {"{{len .spec.containers}} {{len .metadata.name}}", "2 5"},
      {"{{(index .spec.containers 1).image}}", "busybox"},
      {"{{.metadata.name | printf \"%s!\"}}|{{.metadata.name | len}}", "web-1!|5"},
      {"{{$x := 1}}{{range .spec.containers}}{{$x = 2}}{{end}}{{$x}}", "2"},
      {R"({{range .spec.containers}}{{if eq .name "log"}}{{break}}{{end}}{{.name}} {{end}})",
       "web "},
      {R"({{define "x"}}[{{.}}]{{end}}{{template "x" .metadata.name}}{{template "x"}})",
       "[web-1][<no value>]"},
      {"{{.data.password | base64decode}}", "hunter2"},
      {R"({{exists . "data" "password"}} {{exists . "data" "nope"}})", "true false"},
      {"a{{/* a comment */}}b{{- /* trimmed */ -}} c", "abc"},
  };
  for (const Case& c : cases) EXPECT_EQ(Render(c.text), c.want) << c.text;
}

TEST(GoTemplateTest, AMalformedTemplateIsRefusedAsGoRefusesIt) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"{{foo}}", "template: output:1: function \"foo\" not defined"},
      {"{{.metadata.name", "template: output:1: unclosed action"},
      {"\n\n{{end}}", "template: output:3: unexpected {{end}}"},
      {"{{$y}}", "template: output:1: undefined variable \"$y\""},
  };
  for (const Case& c : cases) {
    StatusOr<GoTemplate> t = GoTemplate::Parse(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().message(), c.error) << c.text;
  }
}

TEST(GoTemplateTest, AnExecutionErrorSaysWhereAndKeepsWhatWasWritten) {
  struct Case {
    const char* text;
    const char* written;
    const char* error;
  } cases[] = {
      {"A{{len .spec.size}}", "A",
       "template: output:1:3: executing \"output\" at <len .spec.size>: error calling len: len "
       "of type int64"},
      {"{{.metadata.name.x}}", "",
       "template: output:1:11: executing \"output\" at <.metadata.name.x>: can't evaluate field x "
       "in type interface {}"},
      {"{{eq .spec.ratio 1}}", "",
       "template: output:1:2: executing \"output\" at <eq .spec.ratio 1>: error calling eq: "
       "incompatible types for comparison"},
      {"x\n{{template \"nope\"}}", "x\n",
       "template: output:2:11: executing \"output\" at <{{template \"nope\"}}>: template \"nope\" "
       "not defined"},
  };
  for (const Case& c : cases) {
    StatusOr<GoTemplate> t = GoTemplate::Parse(c.text);
    ASSERT_OK(t) << c.text;
    std::string out;
    Status st = t->Execute(Data(), &out);
    EXPECT_EQ(st.message(), c.error) << c.text;
    EXPECT_EQ(out, c.written) << c.text;
  }
}

TEST(GoTemplateTest, RecursionAndNestingAreBounded) {
  StatusOr<GoTemplate> t =
      GoTemplate::Parse(R"({{define "a"}}{{template "a"}}{{end}}{{template "a"}})");
  ASSERT_OK(t);
  std::string out;
  Status st = t->Execute(Data(), &out);
  EXPECT_NE(st.message().find("exceeded maximum template depth"), std::string::npos) << st;
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "(";
  StatusOr<GoTemplate> nested = GoTemplate::Parse("{{" + deep + "1}}");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nested too deeply"), std::string::npos)
      << nested.status();
}

}  // namespace
}  // namespace kcache::tool
