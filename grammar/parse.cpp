// Parse stage: policy text -> ast::File.
//
// PEGTL builds a parse tree of the selected rules of grammar.hpp; this file walks that tree
// into the AST. A syntax error is one E001 SyntaxError at the failing position with the
// grammar's "expected ..." message; condition nesting beyond the configured depth is E092,
// checked while parsing (a control hook counts open conditions), so no later recursive pass
// over conditions can run deep. Positions are byte offsets made into lines and character
// columns by lines.hpp (PEGTL's own counting knows one kind of line break and counts bytes).
#include "parse.hpp"

#include <cctype>
#include <string>
#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/parse_tree.hpp>
#include <vector>

#include "grammar.hpp"
#include "lines.hpp"

namespace recourse::grammar {
namespace {

namespace pt = tao::pegtl::parse_tree;

template <typename Rule>
using selector = pt::selector<
    Rule,
    pt::store_content::on<version_number, policy_name, setting_key, setting_target, string_lit,
                          number, value_ident, backoff_kind, param_name, code_name, rule_name,
                          route_kind, route_arg, schedule_name, route_schedule, route_attempts,
                          attr, cmp_op, is_what, assert_kind, waiver_name, waiver_reason,
                          hit_policy, map_protocol, map_code, base_name, test_name, envelope_json,
                          context_json, expect_route, expect_target, expect_rule_name, delay_min,
                          delay_max, budget_name, bound_metric, bound_code, bound_limit>,
    pt::remove_content::on<policy_decl, tool_block, limits_block, breaker_block, throttle_block,
                           setting, value_list, backoff_decl, schedule_decl, backoff_param,
                           codes_decl, rule_decl, default_decl, route, not_expr, test, in_arguments,
                           assert_decl, waive_decl, assert_routes, map_decl, hit_decl, test_decl,
                           expect_decl, bound_decl>,
    pt::fold_one::on<cond, and_expr>>;

struct TooDeep {
  tao::pegtl::position pos;
};

struct Depth {
  std::size_t current = 0;
  std::size_t max = 0;
};

// Rules that nest: each `(` opens a cond, each `not` a not_expr. Both are selected rules, whose
// control hooks the parse tree calls (it skips them for unselected rules).
template <typename Rule>
inline constexpr bool kNests = std::is_same_v<Rule, cond> || std::is_same_v<Rule, not_expr>;

// must_if's control, plus a nesting counter for conditions.
template <typename Rule>
struct control : tao::pegtl::must_if<errors>::control<Rule> {
  using base = typename tao::pegtl::must_if<errors>::template control<Rule>;
  template <typename Input, typename... States>
  static void start(const Input& in, Depth& depth, States&&... st) {
    if constexpr (kNests<Rule>) {
      // max_depth counts the `(` and `not` nested inside a condition; the counter also sees the
      // condition itself and the look-ahead for `not` at the innermost level (two more).
      if (++depth.current > depth.max + 2) throw TooDeep{in.position()};
    }
    base::start(in, depth, st...);
  }
  template <typename Input, typename... States>
  static void success(const Input& in, Depth& depth, States&&... st) {
    if constexpr (kNests<Rule>) --depth.current;
    base::success(in, depth, st...);
  }
  template <typename Input, typename... States>
  static void failure(const Input& in, Depth& depth, States&&... st) {
    if constexpr (kNests<Rule>) --depth.current;
    base::failure(in, depth, st...);
  }
};

using Node = pt::node;

// The string between the quotes, with escapes resolved.
std::string unquote(std::string_view quoted) {
  std::string out;
  for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      c = quoted[++i];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
    out += c;
  }
  return out;
}

ast::Op to_op(std::string_view op) {
  if (op == "==") return ast::Op::Eq;
  if (op == "!=") return ast::Op::Ne;
  if (op == "<") return ast::Op::Lt;
  if (op == "<=") return ast::Op::Le;
  if (op == ">") return ast::Op::Gt;
  return ast::Op::Ge;
}

// Turns the parse tree of one source into AST nodes whose positions name that source.
struct TreeReader {
  const Lines& lines;
  std::uint32_t source;

  ast::Pos pos_of(const Node& n) const { return lines.pos(n.m_begin.byte, source); }

  ast::Value to_value(const Node& n) const {
    ast::Value v;
    v.pos = pos_of(n);
    if (n.string_view().substr(0, 1) == "\"") {
      v.kind = ast::Value::Kind::String;
      v.text = unquote(n.string_view());
    } else if (n.is_type<number>() || n.is_type<delay_min>() || n.is_type<delay_max>()) {
      v.kind = ast::Value::Kind::Number;
      const auto s = n.string_view();
      std::size_t end = s.size();
      while (end > 0 && std::isalpha(static_cast<unsigned char>(s[end - 1]))) --end;
      v.text = std::string(s.substr(0, end));
      v.unit = std::string(s.substr(end));
    } else {
      v.kind = ast::Value::Kind::Ident;
      v.text = n.string();
    }
    return v;
  }

  // setting: setting_key (value | value_list) [setting_target]; backoff_param: param_name value.
  ast::Setting to_setting(const Node& n) const {
    ast::Setting s;
    const Node& key = *n.children.at(0);
    s.key = key.string();
    s.pos = pos_of(key);
    const Node& val = *n.children.at(1);
    if (val.is_type<value_list>()) {
      s.is_list = true;
      for (const auto& c : val.children) s.values.push_back(to_value(*c));
    } else {
      s.values.push_back(to_value(val));
    }
    if (n.children.size() > 2) s.target = to_value(*n.children[2]);
    return s;
  }

  // Depth is bounded by Depth::max during parsing, so this recursion is bounded too.
  ast::Expr to_expr(const Node& n) const {
    ast::Expr e;
    e.pos = pos_of(n);
    if (n.is_type<cond>() || n.is_type<and_expr>()) {
      e.kind = n.is_type<cond>() ? ast::Expr::Kind::Or : ast::Expr::Kind::And;
      for (const auto& c : n.children) e.children.push_back(to_expr(*c));
    } else if (n.is_type<not_expr>()) {
      e.kind = ast::Expr::Kind::Not;
      e.children.push_back(to_expr(*n.children.at(0)));
    } else {  // test: attr [cmp_op value | in_arguments | value_list | is_what]
      e.kind = ast::Expr::Kind::Test;
      e.attr = n.children.at(0)->string();
      if (n.children.size() == 1) {
        e.op = ast::Op::Truthy;
      } else {
        const Node& second = *n.children[1];
        if (second.is_type<cmp_op>()) {
          e.op = to_op(second.string_view());
          e.values.push_back(to_value(*n.children.at(2)));
        } else if (second.is_type<in_arguments>()) {
          e.op = ast::Op::InArguments;
        } else if (second.is_type<value_list>()) {
          e.op = ast::Op::InList;
          for (const auto& c : second.children) e.values.push_back(to_value(*c));
        } else {
          e.op = second.string_view() == "absent" ? ast::Op::IsAbsent : ast::Op::IsPresent;
        }
      }
    }
    return e;
  }

  ast::Route to_route(const Node& n) const {
    ast::Route r;
    r.kind = n.children.at(0)->string();
    r.pos = pos_of(*n.children.at(0));
    for (std::size_t i = 1; i < n.children.size(); ++i) {
      const Node& c = *n.children[i];
      if (c.is_type<route_schedule>())
        r.schedule = to_value(c);
      else if (c.is_type<route_attempts>())
        r.attempts = to_value(*c.children.at(0));
      else
        r.args.push_back(to_value(c));
    }
    return r;
  }

  // The item's kind and how many entries the policy's vector of that kind holds so far.
  static std::pair<ast::Item::Kind, std::size_t> item_kind(const Node& n, const ast::Policy& p) {
    using K = ast::Item::Kind;
    if (n.is_type<tool_block>()) return {K::Tool, p.tool.size()};
    if (n.is_type<limits_block>()) return {K::Limits, p.limits.size()};
    if (n.is_type<breaker_block>()) return {K::Breaker, p.breaker.size()};
    if (n.is_type<throttle_block>()) return {K::Throttle, p.throttle.size()};
    if (n.is_type<backoff_decl>()) return {K::Backoff, p.backoff.size()};
    if (n.is_type<schedule_decl>()) return {K::Schedule, p.schedules.size()};
    if (n.is_type<codes_decl>()) return {K::Codes, p.codes.size()};
    if (n.is_type<rule_decl>()) return {K::Rule, p.rules.size()};
    if (n.is_type<default_decl>()) return {K::Default, p.defaults.size()};
    if (n.is_type<assert_decl>()) return {K::Assert, p.assertions.size()};
    if (n.is_type<bound_decl>()) return {K::Bound, p.bounds.size()};
    if (n.is_type<waive_decl>()) return {K::Waive, p.waivers.size()};
    if (n.is_type<map_decl>()) return {K::Map, p.mappings.size()};
    if (n.is_type<hit_decl>()) return {K::Hit, p.hit.size()};
    if (n.is_type<test_decl>()) return {K::Test, p.tests.size()};
    return {K::Other, 0};
  }

  // test_decl: test_name, envelope_json, [context_json], expect_decl.
  ast::Test to_test(const Node& n) const {
    ast::Test t;
    t.pos = pos_of(n);
    t.name = unquote(n.children.at(0)->string_view());
    t.name_pos = pos_of(*n.children[0]);
    t.envelope = n.children.at(1)->string();
    t.envelope_pos = pos_of(*n.children[1]);
    std::size_t k = 2;
    if (n.children.at(k)->is_type<context_json>()) {
      t.context = n.children[k]->string();
      t.context_pos = pos_of(*n.children[k++]);
    }
    const Node& expect = *n.children.at(k);
    t.expect.pos = pos_of(expect);
    for (const auto& c : expect.children) {
      ast::Value v = to_value(*c);
      const bool again = (c->is_type<expect_target>() && t.expect.target) ||
                         (c->is_type<expect_rule_name>() && t.expect.rule) ||
                         (c->is_type<delay_min>() && t.expect.delay_min) ||
                         (c->is_type<budget_name>() && t.expect.exhausted);
      if (again && !t.expect.repeated) t.expect.repeated = v.pos;
      if (c->is_type<expect_route>())
        t.expect.route = v;
      else if (c->is_type<expect_target>())
        t.expect.target = v;
      else if (c->is_type<expect_rule_name>())
        t.expect.rule = v;
      else if (c->is_type<delay_min>())
        t.expect.delay_min = v;
      else if (c->is_type<delay_max>())
        t.expect.delay_max = v;
      else if (c->is_type<budget_name>())
        t.expect.exhausted = v;
    }
    return t;
  }

  ast::Policy to_policy(const Node& n) const {
    ast::Policy p;
    p.pos = pos_of(n);
    const Node& name = *n.children.at(0);
    p.name = unquote(name.string_view());
    p.name_pos = pos_of(name);
    for (std::size_t i = 1; i < n.children.size(); ++i) {
      const Node& item = *n.children[i];
      if (item.is_type<base_name>()) {
        p.base = to_value(item);
        continue;
      }
      const std::size_t before = item_kind(item, p).second;
      if (item.is_type<tool_block>() || item.is_type<limits_block>() ||
          item.is_type<breaker_block>() || item.is_type<throttle_block>()) {
        p.has_breaker |= item.is_type<breaker_block>();
        p.has_throttle |= item.is_type<throttle_block>();
        auto& into = item.is_type<tool_block>()      ? p.tool
                     : item.is_type<limits_block>()  ? p.limits
                     : item.is_type<breaker_block>() ? p.breaker
                                                     : p.throttle;
        for (const auto& s : item.children) into.push_back(to_setting(*s));
      } else if (item.is_type<backoff_decl>() || item.is_type<schedule_decl>()) {
        // [schedule_name] backoff_kind backoff_param...
        ast::Backoff b;
        b.pos = pos_of(item);
        std::size_t j = 0;
        if (item.is_type<schedule_decl>()) {
          b.name = item.children.at(0)->string();
          b.name_pos = pos_of(*item.children[j++]);
        }
        b.kind = item.children.at(j)->string();
        b.kind_pos = pos_of(*item.children[j]);
        for (++j; j < item.children.size(); ++j) b.params.push_back(to_setting(*item.children[j]));
        (b.name.empty() ? p.backoff : p.schedules).push_back(std::move(b));
      } else if (item.is_type<codes_decl>()) {
        for (const auto& c : item.children) p.codes.push_back(to_value(*c));
      } else if (item.is_type<rule_decl>()) {
        ast::Rule r;
        r.pos = pos_of(item);
        r.name = item.children.at(0)->string();
        std::size_t k = 1;
        if (item.children.size() == 3) r.when = to_expr(*item.children[k++]);
        r.route = to_route(*item.children.at(k));
        p.rules.push_back(std::move(r));
      } else if (item.is_type<assert_decl>()) {
        // assert_kind, assert_routes (value_list or a value_ident), cond
        ast::Assertion a;
        a.pos = pos_of(item);
        a.kind = to_value(*item.children.at(0));
        const Node& routes = *item.children.at(1)->children.at(0);
        if (routes.is_type<value_list>())
          for (const auto& r : routes.children) a.routes.push_back(to_value(*r));
        else
          a.routes.push_back(to_value(routes));
        a.when = to_expr(*item.children.at(2));
        p.assertions.push_back(std::move(a));
      } else if (item.is_type<map_decl>()) {  // map_protocol, value, map_code
        ast::Mapping m;
        m.pos = pos_of(item);
        m.protocol = to_value(*item.children.at(0));
        m.key = to_value(*item.children.at(1));
        m.code = to_value(*item.children.at(2));
        p.mappings.push_back(std::move(m));
      } else if (item.is_type<hit_decl>()) {
        p.hit.push_back(to_value(*item.children.at(0)));
      } else if (item.is_type<waive_decl>()) {
        ast::Waiver w;
        w.pos = pos_of(item);
        w.name = to_value(*item.children.at(0));
        w.reason = unquote(item.children.at(1)->string_view());
        p.waivers.push_back(std::move(w));
      } else if (item.is_type<bound_decl>()) {  // bound_metric, [bound_code], bound_limit
        ast::Bound b;
        b.pos = pos_of(item);
        b.metric = to_value(*item.children.at(0));
        if (item.children.size() == 3) b.code = to_value(*item.children[1]);
        b.limit = to_value(*item.children.back()->children.at(0));
        p.bounds.push_back(std::move(b));
      } else if (item.is_type<test_decl>()) {
        p.tests.push_back(to_test(item));
      } else if (item.is_type<default_decl>()) {
        ast::Rule r;
        r.pos = pos_of(item);
        r.name = "default";
        r.route = to_route(*item.children.at(0));
        p.defaults.push_back(std::move(r));
      }
      const auto [kind, after] = item_kind(item, p);
      p.items.push_back({kind, pos_of(item), before, after - before});
    }
    return p;
  }
};

// The offset of the innermost '{' of `text` that no '}' closes (strings and comments skipped),
// or npos when every '{' is closed.
std::size_t unclosed_brace(std::string_view text) {
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) i += text[i] == '\\';
    } else if (text[i] == '#') {
      while (i + 1 < text.size() && !line_break(text, i + 1)) ++i;
    } else if (text[i] == '{') {
      open.push_back(i);
    } else if (text[i] == '}' && !open.empty()) {
      open.pop_back();
    }
  }
  return open.empty() ? std::string_view::npos : open.back();
}

}  // namespace

std::optional<ast::File> parse(std::string_view path, std::string_view text, std::size_t max_depth,
                               std::optional<SyntaxError>& error, std::uint32_t source) {
  const Lines lines(text);
  auto fail = [&](const char* code, const tao::pegtl::position& p, std::string message,
                  std::string help) {
    error = SyntaxError{code, lines.pos(p.byte, source), std::move(message), std::move(help)};
    return std::nullopt;
  };
  tao::pegtl::memory_input<> in(text.data(), text.size(), std::string(path));
  Depth depth{0, max_depth};
  std::unique_ptr<Node> root;
  try {
    root = pt::parse<file, Node, selector, tao::pegtl::nothing, control>(in, depth);
  } catch (const tao::pegtl::parse_error& e) {
    tao::pegtl::position at = e.positions().front();
    std::string help;
    if (at.byte == text.size()) {
      // At the end of the text: on its last non-blank line, where a caret can show, and naming
      // the brace a missing '}' leaves open.
      while (at.byte > 0 && std::isspace(static_cast<unsigned char>(text[at.byte - 1]))) --at.byte;
      if (const std::size_t brace = unclosed_brace(text); brace != std::string_view::npos) {
        const ast::Pos opened = lines.pos(brace, source);
        help = "the '{' opened at line " + std::to_string(opened.line) + ", column " +
               std::to_string(opened.column) + " is never closed";
      }
    }
    return fail("E001", at, "syntax error: expected " + std::string(e.message()), help);
  } catch (const TooDeep& e) {
    return fail("E092", e.pos,
                "condition nested more than " + std::to_string(max_depth) + " levels deep",
                "split the condition into several rules, or raise CompileOptions::max_depth");
  }
  if (!root)  // `file` ends in must<eof>, so a failed parse has raised already
    return fail("E001", in.position(), "syntax error", "");
  ast::File f;
  f.path = std::string(path);
  const TreeReader reader{lines, source};
  for (const auto& c : root->children) {
    if (c->is_type<version_number>()) {
      f.version = reader.to_value(*c);
      f.version->kind = ast::Value::Kind::Number;
      f.version->text = c->string();
    } else if (c->is_type<policy_decl>()) {
      f.policies.push_back(reader.to_policy(*c));
    }
  }
  return f;
}

}  // namespace recourse::grammar
