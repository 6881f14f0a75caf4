// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/completion.h"

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "kcache/indexer.h"
#include "tools/kcache/command.h"
#include "tools/kcache/source.h"

namespace kcache::tool {
namespace {

struct Candidate {
  std::string word;
  std::string description;
};

struct Completion {
  std::vector<Candidate> candidates;
  std::string directive;  // "", "nospace", "files" or "dirs"
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool IsGroup(const std::string& name) {
  for (const Command* c : Commands()) {
    if (StartsWith(c->name, name + " ")) return true;
  }
  return false;
}

// The first words of the commands ("snapshot" once, not its verbs).
std::vector<Candidate> TopLevel() {
  std::vector<Candidate> out;
  for (const Command* c : Commands()) {
    const std::string name = c->name;
    if (name.find(' ') == std::string::npos) out.push_back({name, c->summary});
  }
  out.push_back({"help", "a command's arguments, examples and flags"});
  return out;
}

std::vector<Candidate> Verbs(const std::string& group) {
  std::vector<Candidate> out;
  for (const Command* c : Commands()) {
    if (StartsWith(c->name, group + " ")) out.push_back({c->name + group.size() + 1, c->summary});
  }
  return out;
}

// What the words before the one being completed said.
struct Words {
  std::map<std::string, std::string> flags;  // long name -> value ("true" for booleans)
  std::vector<std::string> positional;
  std::string pending;  // a flag whose value is the word being completed
  bool after_dashes = false;
};

const cli::FlagSet::Info* FlagNamed(const std::vector<cli::FlagSet::Info>& flags,
                                    std::string_view name) {
  for (const cli::FlagSet::Info& f : flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const cli::FlagSet::Info* FlagShort(const std::vector<cli::FlagSet::Info>& flags, char c) {
  for (const cli::FlagSet::Info& f : flags) {
    if (f.shorthand == c) return &f;
  }
  return nullptr;
}

// Reads `words` as FlagSet::Parse would, without failing on what it does
// not know.
Words Read(const std::vector<cli::FlagSet::Info>& flags, const std::vector<std::string>& words) {
  Words w;
  for (const std::string& word : words) {
    if (!w.pending.empty()) {
      w.flags[w.pending] = word;
      w.pending.clear();
    } else if (w.after_dashes || word.size() < 2 || word[0] != '-') {
      w.positional.push_back(word);
    } else if (word == "--") {
      w.after_dashes = true;
    } else if (StartsWith(word, "--")) {
      const size_t eq = word.find('=');
      const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
      const cli::FlagSet::Info* f = FlagNamed(flags, name);
      if (eq != std::string::npos) {
        w.flags[name] = word.substr(eq + 1);
      } else if (f && !f->type.empty()) {
        w.pending = name;
      } else {
        w.flags[name] = "true";
      }
    } else {
      // -n ns, -nns, -n=ns; booleans may be grouped (-Aw).
      for (size_t i = 1; i < word.size(); ++i) {
        const cli::FlagSet::Info* f = FlagShort(flags, word[i]);
        if (!f) break;
        if (f->type.empty()) {
          w.flags[f->name] = "true";
          continue;
        }
        std::string rest = word.substr(i + 1);
        if (rest.empty()) {
          w.pending = f->name;
        } else {
          w.flags[f->name] = rest[0] == '=' ? rest.substr(1) : rest;
        }
        break;
      }
    }
  }
  return w;
}

// The cache or snapshot the words name, opened read-only; null if none
// can be.
std::unique_ptr<Source> OpenNamed(const Words& w) {
  auto get = [&](const char* name) {
    auto it = w.flags.find(name);
    return it == w.flags.end() ? std::string() : it->second;
  };
  StatusOr<std::unique_ptr<Source>> s = Source::Open(get("cache"), get("snapshot"));
  if (!s.ok()) return nullptr;
  return std::move(*s);
}

std::vector<Candidate> ResourceTypes(Source& source) {
  std::vector<Candidate> out;
  for (const KeyspaceStats& ks : source.keyspaces()) {
    out.push_back({ks.name, ks.resource ? ks.resource->kind : ""});
  }
  return out;
}

std::vector<Candidate> Namespaces(Source& source) {
  std::set<std::string> names;
  for (const KeyspaceStats& ks : source.keyspaces()) {
    StatusOr<std::shared_ptr<Indexer>> idx = source.Keyspace(ks.name);
    if (!idx.ok()) continue;
    if (ks.resource && ks.resource->resource == "namespaces" && ks.resource->group.empty()) {
      if (StatusOr<std::vector<std::string>> keys = (*idx)->ListKeys(); keys.ok()) {
        names.insert(keys->begin(), keys->end());
      }
    } else if (StatusOr<std::vector<std::string>> ns = (*idx)->ListIndexFuncValues(kNamespaceIndex);
               ns.ok()) {
      names.insert(ns->begin(), ns->end());
    }
  }
  std::vector<Candidate> out;
  for (const std::string& n : names) {
    if (!n.empty()) out.push_back({n, ""});
  }
  return out;
}

// The names of objects of `type` in the namespace the words give (kubectl's
// "default" if none; every namespace with -A).
std::vector<Candidate> ObjectNames(Source& source, const std::string& type, const Words& w) {
  std::vector<Candidate> out;
  StatusOr<std::string> keyspace = source.Resolve(type);
  if (!keyspace.ok()) return out;
  StatusOr<std::shared_ptr<Indexer>> idx = source.Keyspace(*keyspace);
  if (!idx.ok()) return out;
  StatusOr<std::vector<std::string>> keys = Status::OK();
  const bool all = w.flags.count("all-namespaces") && w.flags.at("all-namespaces") != "false";
  if (!source.Namespaced(*keyspace) || all) {
    keys = (*idx)->ListKeys();
  } else {
    auto ns = w.flags.find("namespace");
    keys = (*idx)->IndexKeys(kNamespaceIndex, ns == w.flags.end() ? "default" : ns->second);
  }
  if (!keys.ok()) return out;
  std::set<std::string> names;
  for (const std::string& key : *keys) names.insert(key.substr(key.find('/') + 1));
  for (const std::string& n : names) out.push_back({n, ""});
  return out;
}

Completion FlagValue(const Command& command, const std::string& flag,
                     const cli::FlagSet::Info* info, const Words& w) {
  const std::string name = command.name;
  if (flag == "namespace") {
    if (std::unique_ptr<Source> s = OpenNamed(w)) return {Namespaces(*s), ""};
    return {};
  }
  if (flag == "output" && name == "get") {
    Completion c;
    for (const char* f : {"json", "yaml", "name", "wide"}) c.candidates.push_back({f, ""});
    for (const char* f : {"jsonpath=", "jsonpath-file=", "jsonpath-as-json=", "go-template=",
                          "go-template-file=", "custom-columns=", "custom-columns-file="}) {
      c.candidates.push_back({f, ""});
    }
    return c;
  }
  if (flag == "output") return {{{"json", ""}, {"yaml", ""}}, ""};
  if (flag == "log-format") return {{{"text", ""}, {"json", ""}}, ""};
  if (flag == "cache" || StartsWith(flag, "dir")) return {{}, "dirs"};
  // Other strings may be files (as kubectl's flags default to); numbers and
  // lists are not.
  if (info && info->type == "string") return {{}, "files"};
  return {};
}

Completion Positional(const Command& command, const Words& w) {
  const std::string name = command.name;
  const size_t n = w.positional.size();
  if (name == "completion") return {{{"bash", ""}, {"zsh", ""}}, ""};
  if (name == "diff" || name == "snapshot export" || name == "snapshot import" ||
      name == "snapshot verify") {
    return {{}, "files"};
  }
  if (name == "snapshot create") return {{}, "dirs"};
  const bool get = name == "get";
  if (!get && name != "tree" && name != "sync") return {};
  std::unique_ptr<Source> source = OpenNamed(w);
  if (!source) return {};
  if (n == 0 || name == "sync") return {ResourceTypes(*source), ""};
  if (name == "tree" && n > 1) return {};
  return {ObjectNames(*source, w.positional[0], w), ""};
}

Completion CompleteWords(std::vector<std::string> words, const std::string& current) {
  if (words.empty()) return {TopLevel(), ""};
  std::string name = words[0];
  if (name == "help") {
    if (words.size() == 1) return {TopLevel(), ""};
    if (words.size() == 2 && IsGroup(words[1])) return {Verbs(words[1]), ""};
    return {};
  }
  size_t used = 1;
  if (IsGroup(name)) {
    if (words.size() == 1 && !StartsWith(current, "-")) return {Verbs(name), ""};
    if (words.size() >= 2) {
      name += " " + words[1];
      used = 2;
    }
  }
  const Command* command = FindCommand(name);
  if (!command) return {};
  std::vector<cli::FlagSet::Info> flags;
  if (IsGroup(name)) {
    flags = {{"help", 'h', "", "show this help"}};
  } else if (std::optional<std::vector<cli::FlagSet::Info>> f = CommandFlags(*command)) {
    flags = *f;
  }
  const Words w = Read(flags, {words.begin() + used, words.end()});
  if (!w.pending.empty()) return FlagValue(*command, w.pending, FlagNamed(flags, w.pending), w);
  if (!w.after_dashes && StartsWith(current, "--") && current.find('=') != std::string::npos) {
    // --output=js: the value, each candidate spelled with its flag.
    const std::string flag = current.substr(2, current.find('=') - 2);
    Completion c = FlagValue(*command, flag, FlagNamed(flags, flag), w);
    for (Candidate& cand : c.candidates) cand.word = "--" + flag + "=" + cand.word;
    return c;
  }
  if (!w.after_dashes && StartsWith(current, "-")) {
    Completion c;
    for (const cli::FlagSet::Info& f : flags) c.candidates.push_back({"--" + f.name, f.help});
    if (current == "-") {
      for (const cli::FlagSet::Info& f : flags) {
        if (f.shorthand) c.candidates.push_back({std::string("-") + f.shorthand, f.help});
      }
    }
    return c;
  }
  if (name == "get" && current.find('/') != std::string::npos && w.positional.empty()) {
    // TYPE/NAME: the names, each spelled with its type.
    const std::string type = current.substr(0, current.find('/'));
    Completion c;
    if (std::unique_ptr<Source> s = OpenNamed(w)) c.candidates = ObjectNames(*s, type, w);
    for (Candidate& cand : c.candidates) cand.word = type + "/" + cand.word;
    return c;
  }
  return Positional(*command, w);
}

}  // namespace

int Complete(const std::vector<std::string>& args, std::ostream& out) {
  const std::string current = args.empty() ? "" : args.back();
  std::vector<std::string> words(args.begin(), args.end() - (args.empty() ? 0 : 1));
  Completion c = CompleteWords(std::move(words), current);
  std::string text;
  for (const Candidate& cand : c.candidates) {
    if (!StartsWith(cand.word, current)) continue;
    text += cand.word;
    if (!cand.description.empty()) text += "\t" + cand.description;
    text += "\n";
  }
  // "-o jsonpath=" goes on with its template, not a space.
  bool all_open = !text.empty();
  for (const Candidate& cand : c.candidates) {
    if (StartsWith(cand.word, current) && cand.word.back() != '=') all_open = false;
  }
  if (c.directive.empty() && all_open) c.directive = "nospace";
  out << text << ":" << c.directive << "\n";
  return 0;
}

}  // namespace kcache::tool

namespace kcache::tool {
namespace {

// Splits the line up to the cursor at blanks (kcache's words hold none),
// asks `kcache __complete`, and hands bash the words after the last "=" or
// ":" of the current word where bash's COMP_WORDBREAKS breaks there.
constexpr char kBashScript[] = R"sh(# bash completion for kcache. Load it with
#   source <(kcache completion bash)
# or install it as /etc/bash_completion.d/kcache.
_kcache() {
  local line=${COMP_LINE:0:COMP_POINT}
  local -a args lines
  read -ra args <<<"$line"
  [[ -z $line || $line =~ [[:space:]]$ ]] && args+=("")
  (( ${#args[@]} >= 2 )) || return 0
  local cur=${args[${#args[@]}-1]}
  local out
  out=$("${args[0]/#\~/$HOME}" __complete "${args[@]:1}" 2>/dev/null) || return 0
  mapfile -t lines <<<"$out"
  local directive=${lines[${#lines[@]}-1]#:}
  unset 'lines[${#lines[@]}-1]'
  local brk="" tail=$cur
  [[ $COMP_WORDBREAKS == *=* ]] && tail=${tail##*=}
  [[ $COMP_WORDBREAKS == *:* ]] && tail=${tail##*:}
  brk=${cur%"$tail"}
  COMPREPLY=()
  case $directive in
    files) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$tail"); return 0 ;;
    dirs) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$tail"); return 0 ;;
    nospace) compopt -o nospace 2>/dev/null ;;
  esac
  local l
  for l in "${lines[@]}"; do
    [[ -n $l ]] && COMPREPLY+=("${l%%$'\t'*}")
  done
  COMPREPLY=("${COMPREPLY[@]#"$brk"}")
  return 0
}
complete -F _kcache kcache
)sh";

// zsh keeps "--output=js" as one word: no break to undo, and _describe
// shows each candidate's description.
constexpr char kZshScript[] = R"sh(#compdef kcache
# zsh completion for kcache. Load it with
#   source <(kcache completion zsh)
# or install it as _kcache in a directory of $fpath.
_kcache() {
  local -a lines cands
  local out directive line
  out=$(${~words[1]} __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null) || return 1
  lines=("${(@f)out}")
  directive=${lines[-1]#:}
  lines=("${(@)lines[1,-2]}")
  if [[ $directive == files || $directive == dirs ]]; then
    [[ ${words[CURRENT]} == --*=* ]] && compset -P '*='
    if [[ $directive == dirs ]]; then _files -/; else _files; fi
    return
  fi
  for line in "${lines[@]}"; do
    [[ -n $line ]] || continue
    if [[ $line == *$'\t'* ]]; then
      cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    else
      cands+=("${line//:/\\:}")
    fi
  done
  if [[ $directive == nospace ]]; then
    _describe -t kcache kcache cands -S ''
  else
    _describe -t kcache kcache cands
  fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _kcache "$@"
elif (( $+functions[compdef] )); then
  compdef _kcache kcache
fi
)sh";

int CompletionMain(const Command& self, const std::vector<std::string>& args) {
  cli::FlagSet flags;
  std::vector<std::string> positional;
  if (int rc = ParseFlags(self, flags, args, &positional); rc >= 0) return rc;
  if (positional.size() != 1 || (positional[0] != "bash" && positional[0] != "zsh")) {
    return Fail(Status::InvalidArgument("name the shell: bash or zsh"), self.name);
  }
  std::cout << (positional[0] == "bash" ? kBashScript : kZshScript);
  return 0;
}

}  // namespace

const Command kCompletionCommand = {
    "completion",
    "completion (bash | zsh)",
    "a script that completes kcache's commands, flags, resource types and names in a shell",
    "Prints a script that makes bash or zsh complete kcache's commands, flags and flag values, "
    "and the resource types, object names and namespaces of the cache or snapshot that the "
    "command line names (--cache, --snapshot), as kubectl completes them from its server.",
    "  # Complete in this bash session\n"
    "  source <(kcache completion bash)\n"
    "  # In every bash session\n"
    "  kcache completion bash > /etc/bash_completion.d/kcache\n"
    "  # In zsh (after compinit)\n"
    "  source <(kcache completion zsh)\n",
    CompletionMain,
};

}  // namespace kcache::tool
