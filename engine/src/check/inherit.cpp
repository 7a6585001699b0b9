// Inheritance stage (inherit.hpp): resolves `extends` chains and merges each policy's items
// with its base's, in the AST, so the checker, compiler and analysis see one policy whose
// positions still point into the file each item came from.
#include "check/inherit.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace recourse::detail {
namespace {

// Appends the items of `from` whose key none of `into`'s own items has (a base's items repeated
// among themselves all come along, as the checker then reports).
template <typename T, typename Key>
void append_missing(std::vector<T>& into, const std::vector<T>& from, Key key) {
  std::set<decltype(key(into.front()))> own;
  for (const T& y : into) own.insert(key(y));
  for (const T& x : from)
    if (!own.count(key(x))) into.push_back(x);
}

void merge(ast::Policy& child, const ast::Policy& base) {
  const auto by_key = [](const ast::Setting& s) { return s.key; };
  append_missing(child.tool, base.tool, by_key);
  append_missing(child.limits, base.limits, by_key);
  append_missing(child.breaker, base.breaker, by_key);
  append_missing(child.throttle, base.throttle, by_key);
  child.has_breaker |= base.has_breaker;
  child.has_throttle |= base.has_throttle;
  if (child.backoff.empty()) child.backoff = base.backoff;
  append_missing(child.schedules, base.schedules, [](const ast::Backoff& b) { return b.name; });
  append_missing(child.codes, base.codes, [](const ast::Value& v) { return v.text; });
  child.rules.insert(child.rules.end(), base.rules.begin(), base.rules.end());
  if (child.defaults.empty()) child.defaults = base.defaults;
  child.assertions.insert(child.assertions.end(), base.assertions.begin(), base.assertions.end());
  child.bounds.insert(child.bounds.end(), base.bounds.begin(), base.bounds.end());
  append_missing(child.waivers, base.waivers, [](const ast::Waiver& w) { return w.name.text; });
  if (child.hit.empty()) child.hit = base.hit;
  append_missing(child.mappings, base.mappings, [](const ast::Mapping& m) {
    return std::pair{m.protocol.text, m.key.text};
  });
  child.base.reset();
}

class Resolver {
 public:
  Resolver(std::vector<ast::File>& files, const Sources& sources, const BaseLoader& load,
           std::size_t max_depth, std::vector<Diagnostic>& out)
      : files_(files), sources_(sources), load_(load), max_depth_(max_depth), out_(out) {}

  void run() {
    index(0);
    // Merged copies are built first and written back after, so every merge reads originals.
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::optional<ast::Policy>>> done;
    for (std::size_t f = 0; f < files_.size(); ++f)
      for (std::size_t p = 0; p < files_[f].policies.size(); ++p)
        if (files_[f].policies[p].base) done.push_back({{f, p}, resolved({f, p})});
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      auto& policies = files_[it->first.first].policies;
      if (it->second)
        policies[it->first.second] = std::move(*it->second);
      else
        policies.erase(policies.begin() + static_cast<std::ptrdiff_t>(it->first.second));
    }
  }

 private:
  using Where = std::pair<std::size_t, std::size_t>;  // file, policy

  void index(std::size_t from_file) {
    for (std::size_t f = from_file; f < files_.size(); ++f)
      for (std::size_t p = 0; p < files_[f].policies.size(); ++p)
        by_name_.emplace(files_[f].policies[p].name, Where{f, p});
  }

  const ast::Policy& at(Where w) const { return files_[w.first].policies[w.second]; }

  // The policy at `w` with its chain of bases merged in, or nullopt (reported) when the chain
  // is broken.
  std::optional<ast::Policy> resolved(Where w) {
    ast::Policy merged = at(w);
    std::vector<std::string> chain{merged.name};
    std::string path = files_[w.first].path;
    while (merged.base) {
      const std::string name = merged.base->text;
      if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
        std::string cycle;
        for (const auto& n : chain) cycle += "\"" + n + "\" -> ";
        report(w, "E027",
               "policy \"" + at(w).name + "\" extends itself: " + cycle + "\"" + name + "\"",
               "remove one `extends` from the cycle");
        return std::nullopt;
      }
      auto found = find(name, path);
      if (!found) {
        const bool looked =
            !name.empty() && name.front() != '.' && name.find_first_of("/\\") == std::string::npos;
        report(w, "E026", "no policy \"" + name + "\" to extend",
               looked ? "define it in a file compiled with this one, or in " + name +
                            ".recourse beside it"
                      : "define it in a file compiled with this one (a name with '/' or a "
                        "leading '.' is never looked up as a file)");
        return std::nullopt;
      }
      if (chain.size() > max_depth_) {
        report(w, "E033",
               "policy \"" + at(w).name + "\" has more than " + std::to_string(max_depth_) +
                   " bases along `extends`",
               "flatten the chain, or raise CompileOptions::max_extends_depth");
        return std::nullopt;
      }
      chain.push_back(name);
      const ast::Policy& base = at(*found);
      path = files_[found->first].path;
      const std::optional<ast::Value> next = base.base;
      merge(merged, base);
      merged.base = next;
    }
    return merged;
  }

  std::optional<Where> find(const std::string& name, const std::string& from_path) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    if (!load_) return std::nullopt;
    auto file = load_(name, from_path);
    if (!file) return std::nullopt;
    files_.push_back(std::move(*file));
    index(files_.size() - 1);
    it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }

  void report(Where w, const char* code, std::string message, std::string help) {
    detail::report(out_, sources_, at(w).base->pos, Severity::Error, code, std::move(message),
                   std::move(help));
  }

  std::vector<ast::File>& files_;
  const Sources& sources_;
  const BaseLoader& load_;
  std::size_t max_depth_;
  std::vector<Diagnostic>& out_;
  std::map<std::string, Where> by_name_;  // the first definition (E020 reports others)
};

}  // namespace

void inherit(std::vector<ast::File>& files, const Sources& sources, const BaseLoader& load,
             std::size_t max_depth, std::vector<Diagnostic>& diagnostics) {
  Resolver(files, sources, load, max_depth, diagnostics).run();
}

}  // namespace recourse::detail
