// recourse fmt: policy text -> canonical policy text, comments kept.
//
// Stage: grammar::parse gives the AST (a file that does not parse is never formatted); the
// grammar skips comments, so they are collected here by scanning the source (string literals
// skipped). The file becomes a small layout tree (file > policies > items > settings/codes),
// each node with its source span: item spans come from the start positions the AST records
// (ast::Policy::items) and end where the code before the next item ends. Every comment is then
// attached to one node:
//  - inside a leaf (a rule, a setting, ...): printed on its own line before the leaf;
//  - between two nodes, after code on the same line: trailing the node before it;
//  - between two nodes, on a line of its own: before the node after it (or, with none, at the
//    end of the policy, block or file).
// Printing: one item per line in the author's order, `default` moved last; blank lines between
// items kept (runs collapsed to one); blocks on one line when that fits in 100 columns and no
// comment is inside, else one setting per line; a rule longer than 100 columns puts its route on
// a continuation line.
// Alignment, the way gofmt aligns: within a run of consecutive one-line items of one family,
// each item's key is padded to the run's longest key, so what follows starts in one column. The
// families: `rule` lines (the key `rule NAME`, so `when` or `->` aligns), one-line blocks and
// `backoff` lines (the key is the keyword, so `{` aligns), and the settings of a block printed
// one per line (the key is the setting's name, so `=` aligns). A blank line, a comment on its own
// line, an item of another family or one printed on more than one line ends a run; an item
// that would pass 100 columns padded is left unpadded and ends the run too. The printed text is
// parsed again and must give the same AST (positions aside) and the same comments, or format()
// reports E099 instead of returning it; then verify_format() compiles both texts and compares the
// tables (and the printed text's size with the limit) before format() returns it.
#include "recourse/tooling.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "ast.hpp"
#include "compile/compile.hpp"
#include "lines.hpp"
#include "print.hpp"
#include "source/location.hpp"
#include "source/sources.hpp"

namespace recourse {
namespace {

using grammar::condition_text;
using grammar::list_text;
using grammar::quote_literal;
using grammar::value_text;

constexpr std::size_t kWidth = 100;   // columns a one-line block or rule may take
constexpr std::size_t kIndent = 2;    // per nesting level
constexpr std::size_t kContinue = 4;  // extra indentation of a rule's route on its own line

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct Comment {
  std::size_t begin = 0;   // offset of '#'
  std::uint32_t line = 0;  // 1-based
  std::string text;        // from '#' to the end of the line, trailing whitespace removed
  bool own_line = false;   // only whitespace before it on its line
};

// Lines, comments and trivia of the source text.
class SourceText {
 public:
  explicit SourceText(std::string_view text)
      : text_(text), lines_(text), in_comment_(text.size(), false) {
    blank_before_.assign(lines_.count() + 1, 0);
    for (std::uint32_t l = 1; l <= lines_.count(); ++l) {
      bool blank = true;
      for (std::size_t i = lines_.start(l); i < lines_.end(l) && blank; ++i)
        blank = is_space(text[i]);
      blank_before_[l] = blank_before_[l - 1] + (blank ? 1 : 0);
    }
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"' || grammar::line_break(text, i) > 0)
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '#') {
        Comment m;
        m.begin = i;
        m.line = lines_.line_of(i);
        const std::size_t end = lines_.end(m.line);
        std::size_t last = end;
        while (last > i + 1 && is_space(text[last - 1])) --last;
        m.text = std::string(text.substr(i, last - i));
        m.own_line = true;
        for (std::size_t k = lines_.start(m.line); k < i; ++k)
          m.own_line = m.own_line && is_space(text[k]);
        for (std::size_t k = i; k < end; ++k) in_comment_[k] = true;
        comments_.push_back(std::move(m));
        i = end - 1;  // the loop steps onto the line break
      }
    }
  }

  std::size_t size() const { return text_.size(); }
  const std::vector<Comment>& comments() const { return comments_; }

  std::size_t offset(ast::Pos p) const { return std::min(text_.size(), p.offset); }
  std::uint32_t line_of(std::size_t offset) const { return lines_.line_of(offset); }
  /// Whether a whitespace-only line lies strictly between lines `a` and `b`.
  bool blank_between(std::uint32_t a, std::uint32_t b) const {
    if (a >= b || b - a <= 1) return false;
    return blank_before_[b - 1] - blank_before_[a] > 0;
  }
  /// Where the code before `offset` ends: back over whitespace and comments.
  std::size_t code_end_before(std::size_t offset) const {
    while (offset > 0 && (in_comment_[offset - 1] || is_space(text_[offset - 1]))) --offset;
    return offset;
  }
  char at(std::size_t offset) const { return offset < text_.size() ? text_[offset] : '\0'; }

 private:
  std::string_view text_;
  grammar::Lines lines_;
  std::vector<std::size_t> blank_before_;  // [l]: blank lines among lines 1..l
  std::vector<bool> in_comment_;
  std::vector<Comment> comments_;
};

// ---- printing values and conditions -----------------------------------------------------------

std::string setting(const ast::Setting& s) {
  return s.key + " = " +
         (s.is_list || s.values.size() != 1 ? list_text(s.values) : value_text(s.values[0])) +
         (s.target ? " " + value_text(*s.target) : "");
}

std::string route(const ast::Route& r) {
  std::string out = r.kind;
  for (const auto& a : r.args) out += " " + value_text(a);
  if (r.schedule || r.attempts) out += " with";
  if (r.schedule) out += " backoff " + value_text(*r.schedule);
  if (r.attempts) out += " attempts " + value_text(*r.attempts);
  return out;
}

// A backoff line's kind and parameters, `KIND key value ...`.
std::string backoff_text(const ast::Backoff& b) {
  std::string out = b.kind;
  for (const auto& s : b.params)
    out += " " + s.key + " " + (s.values.empty() ? std::string() : value_text(s.values[0]));
  return out;
}

std::string bound(const ast::Bound& b) {
  return "assert sequence " + value_text(b.metric) + (b.code ? " " + value_text(*b.code) : "") +
         " <= " + value_text(b.limit);
}

std::string expectation(const ast::Expectation& e) {
  std::string out = "expect " + value_text(e.route);
  if (e.target) out += " " + value_text(*e.target);
  if (e.rule) out += " rule " + value_text(*e.rule);
  if (e.delay_min) out += " delay " + value_text(*e.delay_min);
  if (e.delay_max) out += ".." + value_text(*e.delay_max);
  if (e.exhausted) out += " exhausted " + value_text(*e.exhausted);
  return out;
}

// ---- the layout tree --------------------------------------------------------------------------

struct Node {
  enum class Kind { Leaf, Block, Policy, File };
  Kind kind = Kind::Leaf;
  std::size_t begin = 0, end = 0;  // source span [begin, end)
  // Leaf: the text; `tail` (a rule's route) goes on a continuation line when the line is long.
  // Block and Policy: `text` is the header before " {".
  std::string text, tail;
  // The item's family for alignment, and its key: the prefix of `text` that is padded.
  enum class Family { None, Rule, Block, Setting };
  Family family = Family::None;
  std::string key;
  bool codes = false;       // a codes block: children joined with commas
  bool is_default = false;  // `default`: printed after the other items but tests
  bool is_test = false;     // `test`: printed last
  bool displaced = false;   // a `default` with other items (not tests) after it in the source
  std::vector<Node> children;
  std::vector<const Comment*> leading;       // own lines before the node
  const Comment* trailing = nullptr;         // after the node's last line
  const Comment* header_trailing = nullptr;  // containers: after the " {" line
  std::vector<const Comment*> end_comments;  // containers: before the closing brace
  bool container() const { return kind != Kind::Leaf; }
};

struct Unformattable {
  ast::Pos pos;
  std::string message;
};

class Builder {
 public:
  explicit Builder(const SourceText& src) : src_(src) {}

  Node file(const ast::File& f) {
    Node root;
    root.kind = Node::Kind::File;
    root.begin = 0;
    root.end = src_.size();
    if (f.version) {
      Node v;
      v.begin = src_.offset(f.version->pos);
      v.end = v.begin + f.version->text.size();
      v.text = "version " + f.version->text;
      root.children.push_back(std::move(v));
    }
    for (std::size_t i = 0; i < f.policies.size(); ++i) {
      const std::size_t next =
          i + 1 < f.policies.size() ? src_.offset(f.policies[i + 1].pos) : src_.size();
      root.children.push_back(policy(f.policies[i], src_.code_end_before(next)));
    }
    return root;
  }

 private:
  Node policy(const ast::Policy& p, std::size_t end) {
    Node n;
    n.kind = Node::Kind::Policy;
    n.begin = src_.offset(p.pos);
    n.end = end;
    n.text = "policy " + quote_literal(p.name) +
             (p.base ? " extends " + quote_literal(p.base->text) : "");
    const std::size_t close = end - 1;  // the '}'
    for (std::size_t i = 0; i < p.items.size(); ++i) {
      const std::size_t next = i + 1 < p.items.size() ? src_.offset(p.items[i + 1].pos) : close;
      n.children.push_back(item(p, p.items[i], src_.code_end_before(next)));
    }
    bool later = false;  // an item other than `default` or a test follows
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
      it->displaced = it->is_default && later;
      later = later || !(it->is_default || it->is_test);
    }
    return n;
  }

  Node block(const char* keyword, const std::vector<ast::Setting>& settings, const ast::Item& it,
             std::size_t end) {
    Node n;
    n.kind = Node::Kind::Block;
    n.text = keyword;
    const std::size_t close = end - 1;  // the '}'
    for (std::size_t i = it.first; i < it.first + it.count; ++i) {
      Node s;
      s.begin = src_.offset(settings[i].pos);
      const std::size_t next =
          i + 1 < it.first + it.count ? src_.offset(settings[i + 1].pos) : close;
      s.end = src_.code_end_before(next);
      s.text = setting(settings[i]);
      s.family = Node::Family::Setting;
      s.key = settings[i].key;
      n.children.push_back(std::move(s));
    }
    return n;
  }

  Node item(const ast::Policy& p, const ast::Item& it, std::size_t end) {
    using K = ast::Item::Kind;
    Node n;
    switch (it.kind) {
      case K::Tool:
        n = block("tool", p.tool, it, end);
        break;
      case K::Limits:
        n = block("limits", p.limits, it, end);
        break;
      case K::Breaker:
        n = block("breaker", p.breaker, it, end);
        break;
      case K::Throttle:
        n = block("throttle", p.throttle, it, end);
        break;
      case K::Codes: {
        n.kind = Node::Kind::Block;
        n.codes = true;
        n.text = "codes";
        const std::size_t close = end - 1;
        for (std::size_t i = it.first; i < it.first + it.count; ++i) {
          Node c;
          c.begin = src_.offset(p.codes[i].pos);
          const std::size_t next =
              i + 1 < it.first + it.count ? src_.offset(p.codes[i + 1].pos) : close;
          c.end = src_.code_end_before(next);
          c.text = p.codes[i].text;
          n.children.push_back(std::move(c));
        }
        break;
      }
      case K::Backoff:
        n.text = "backoff " + backoff_text(p.backoff.at(it.first));
        break;
      case K::Schedule: {
        const ast::Backoff& b = p.schedules.at(it.first);
        n.text = "backoff " + b.name + " { " + backoff_text(b) + " }";
        break;
      }
      case K::Rule: {
        const ast::Rule& r = p.rules.at(it.first);
        n.text = "rule " + r.name + (r.when ? " when " + condition_text(*r.when) : std::string());
        n.tail = "-> " + route(r.route);
        n.family = Node::Family::Rule;
        n.key = "rule " + r.name;
        break;
      }
      case K::Default:
        n.text = "default -> " + route(p.defaults.at(it.first).route);
        n.is_default = true;
        break;
      case K::Assert: {
        const ast::Assertion& a = p.assertions.at(it.first);
        const bool bare = a.routes.size() == 1 && a.routes[0].kind == ast::Value::Kind::Ident;
        n.text = "assert " + value_text(a.kind) + " " +
                 (bare ? a.routes[0].text : list_text(a.routes)) + " when " +
                 condition_text(a.when);
        break;
      }
      case K::Bound:
        n.text = bound(p.bounds.at(it.first));
        break;
      case K::Waive: {
        const ast::Waiver& w = p.waivers.at(it.first);
        n.text = "waive " + value_text(w.name) + " " + quote_literal(w.reason);
        break;
      }
      case K::Map: {
        const ast::Mapping& m = p.mappings.at(it.first);
        n.text =
            "map " + value_text(m.protocol) + " " + value_text(m.key) + " -> " + value_text(m.code);
        break;
      }
      case K::Hit:
        n.text = "hit " + value_text(p.hit.at(it.first));
        break;
      case K::Test:
        n = test(p.tests.at(it.first), end);
        n.is_test = true;
        break;
      default:
        throw Unformattable{it.pos, "the formatter does not know this kind of item"};
    }
    if ((n.kind == Node::Kind::Block && it.kind != K::Test) || it.kind == K::Backoff) {
      n.family = Node::Family::Block;
      n.key = n.kind == Node::Kind::Block ? n.text : "backoff";
    }
    n.begin = src_.offset(it.pos);
    n.end = end;
    return n;
  }

  // A test block: one line each for the envelope, the context and the expectation; the JSON
  // is kept as written.
  Node test(const ast::Test& t, std::size_t end) {
    Node n;
    n.kind = Node::Kind::Block;
    n.text = "test " + quote_literal(t.name);
    std::vector<std::pair<ast::Pos, std::string>> lines{{t.envelope_pos, "envelope " + t.envelope}};
    if (t.context) lines.push_back({t.context_pos, "context " + *t.context});
    lines.push_back({t.expect.pos, expectation(t.expect)});
    for (std::size_t i = 0; i < lines.size(); ++i) {
      Node c;
      c.begin = src_.offset(lines[i].first);
      c.end =
          src_.code_end_before(i + 1 < lines.size() ? src_.offset(lines[i + 1].first) : end - 1);
      c.text = std::move(lines[i].second);
      n.children.push_back(std::move(c));
    }
    return n;
  }

  const SourceText& src_;
};

// Attaches each comment (in source order) to one node below `n` (see the top of the file).
void attach(Node& n, const std::vector<const Comment*>& comments) {
  std::vector<std::vector<const Comment*>> inner(n.children.size());
  for (const Comment* c : comments) {
    // The first child that ends after the comment: it contains the comment or follows it.
    const auto it =
        std::upper_bound(n.children.begin(), n.children.end(), c->begin,
                         [](std::size_t offset, const Node& child) { return offset < child.end; });
    const std::size_t k = static_cast<std::size_t>(it - n.children.begin());
    Node* next = k < n.children.size() ? &n.children[k] : nullptr;
    Node* prev = k > 0 ? &n.children[k - 1] : nullptr;
    if (next && next->begin <= c->begin) {  // inside a child
      if (next->container())
        inner[k].push_back(c);
      else
        next->leading.push_back(c);
      continue;
    }
    if (!c->own_line) {
      if (prev && !prev->trailing) {
        prev->trailing = c;
        continue;
      }
      if (!prev && n.kind != Node::Kind::File && !n.header_trailing) {
        n.header_trailing = c;
        continue;
      }
    }
    if (next)
      next->leading.push_back(c);
    else
      n.end_comments.push_back(c);
  }
  for (std::size_t k = 0; k < n.children.size(); ++k)
    if (n.children[k].container()) attach(n.children[k], inner[k]);
}

class Printer {
 public:
  explicit Printer(const SourceText& src) : src_(src) {}

  std::string file(const Node& root) {
    Run run;
    bool after_policy = false;
    for (const Node* child : order(root)) {
      const bool is_policy = child->kind == Node::Kind::Policy;
      if (is_policy && after_policy) run.force_blank = true;  // one blank line between policies
      element(*child, 0, run);
      after_policy = is_policy;
    }
    for (const Comment* c : root.end_comments) comment(*c, 0, run);
    return std::move(out_);
  }

 private:
  // Tracks the source line of the last thing printed in one container, for blank lines.
  struct Run {
    std::uint32_t last_line = 0;  // 0: nothing printed yet
    bool force_blank = false;
  };

  void gap(Run& run, std::uint32_t first_line) {
    if (run.last_line != 0 && (run.force_blank || src_.blank_between(run.last_line, first_line)))
      out_ += '\n';
    run.force_blank = false;
  }

  void line(std::size_t indent, std::string_view text, const Comment* trailing) {
    out_.append(indent, ' ');
    out_ += text;
    if (trailing) {
      out_ += "  ";
      out_ += trailing->text;
    }
    out_ += '\n';
  }

  void comment(const Comment& c, std::size_t indent, Run& run) {
    gap(run, c.line);
    line(indent, c.text, nullptr);
    run.last_line = c.line;
  }

  // Children in print order: `default` items after the others.
  static std::vector<const Node*> order(const Node& n) {
    std::vector<const Node*> out;
    for (const auto& c : n.children)
      if (!c.is_default && !c.is_test) out.push_back(&c);
    for (const auto& c : n.children)
      if (c.is_default) out.push_back(&c);
    for (const auto& c : n.children)
      if (c.is_test) out.push_back(&c);
    return out;
  }

  // A child with its leading comments, its own lines and its trailing comment. A `default`
  // moved from the middle gets no blank line before it, and the blank line after it is decided
  // as if it were not there.
  void element(const Node& n, std::size_t indent, Run& run) {
    const std::uint32_t before = run.last_line;
    if (n.displaced && before != 0) run.last_line = std::numeric_limits<std::uint32_t>::max();
    for (const Comment* c : n.leading) comment(*c, indent, run);
    gap(run, src_.line_of(n.begin));
    switch (n.kind) {
      case Node::Kind::Leaf:
        leaf(n, indent);
        break;
      case Node::Kind::Block:
        block(n, indent);
        break;
      default:
        container(n, indent);
        break;
    }
    std::uint32_t last = src_.line_of(n.end > n.begin ? n.end - 1 : n.begin);
    if (n.trailing) last = std::max(last, n.trailing->line);
    run.last_line = n.displaced && before != 0 ? before : last;
  }

  void leaf(const Node& n, std::size_t indent) {
    const std::string text = keyed(n);
    if (n.tail.empty()) return line(indent, text, n.trailing);
    const std::string one = text + " " + n.tail;
    if (indent + grammar::char_count(one) <= kWidth) return line(indent, one, n.trailing);
    line(indent, text, nullptr);
    line(indent + kContinue, n.tail, n.trailing);
  }

  // ---- alignment (see the top of the file) ----

  // `n.text` with its key padded to the width alignment gave it, if any.
  std::string keyed(const Node& n) const {
    const auto it = pad_.find(&n);
    if (it == pad_.end()) return n.text;
    return n.key + std::string(it->second - grammar::char_count(n.key), ' ') +
           n.text.substr(n.key.size());
  }

  // A block on one line, its header `header`.
  static std::string block_line(const Node& n, const std::string& header) {
    const char* sep = n.codes ? ", " : "  ";
    std::string one = header + " {";
    for (std::size_t i = 0; i < n.children.size(); ++i) one += (i ? sep : " ") + n.children[i].text;
    return one + (n.children.empty() ? "}" : " }");
  }

  // The item on one line, unpadded: its columns, or 0 when it is printed on more than one.
  std::size_t one_line(const Node& n, std::size_t indent) const {
    std::string one = n.text;
    if (n.kind == Node::Kind::Block) {
      if (has_comments(n)) return 0;
      one = block_line(n, n.text);
    } else if (!n.tail.empty()) {
      one += " " + n.tail;
    }
    const std::size_t columns = grammar::char_count(one);
    return indent + columns <= kWidth ? columns : 0;
  }

  static std::uint32_t last_line_of(const SourceText& src, const Node& n) {
    const std::uint32_t last = src.line_of(n.end > n.begin ? n.end - 1 : n.begin);
    return n.trailing ? std::max(last, n.trailing->line) : last;
  }

  // Finds the runs among `items` (in print order, at `indent`) and pads each.
  void align(const std::vector<const Node*>& items, std::size_t indent) {
    std::vector<const Node*> run;
    const Node* prev = nullptr;
    for (const Node* c : items) {
      const bool member = c->family != Node::Family::None && !c->displaced && one_line(*c, indent);
      const bool joins = member && !run.empty() && run.back() == prev &&
                         c->family == prev->family && c->leading.empty() &&
                         !src_.blank_between(last_line_of(src_, *prev), src_.line_of(c->begin));
      if (!joins) {
        pad(run, indent);
        run.clear();
      }
      if (member) run.push_back(c);
      prev = c;
    }
    pad(run, indent);
  }

  // Pads the keys of `run` to its longest; an item that would pass kWidth padded is left as it
  // is and splits the run in two.
  void pad(const std::vector<const Node*>& run, std::size_t indent) {
    if (run.size() < 2) return;
    std::size_t width = 0;
    for (const Node* n : run) width = std::max(width, grammar::char_count(n->key));
    for (std::size_t k = 0; k < run.size(); ++k) {
      const Node& n = *run[k];
      if (indent + one_line(n, indent) + width - grammar::char_count(n.key) > kWidth) {
        pad({run.begin(), run.begin() + static_cast<std::ptrdiff_t>(k)}, indent);
        pad({run.begin() + static_cast<std::ptrdiff_t>(k) + 1, run.end()}, indent);
        return;
      }
    }
    for (const Node* n : run) pad_[n] = width;
  }

  static bool has_comments(const Node& n) {
    if (n.header_trailing || !n.end_comments.empty()) return true;
    for (const auto& c : n.children)
      if (c.trailing || !c.leading.empty()) return true;
    return false;
  }

  void block(const Node& n, std::size_t indent) {
    const std::string one = block_line(n, keyed(n));
    if (!has_comments(n) && indent + grammar::char_count(one) <= kWidth)
      return line(indent, one, n.trailing);
    line(indent, n.text + " {", n.header_trailing);
    std::vector<const Node*> settings;
    for (const auto& c : n.children) settings.push_back(&c);
    align(settings, indent + kIndent);
    Run run;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const Node& c = n.children[i];
      for (const Comment* m : c.leading) comment(*m, indent + kIndent, run);
      gap(run, src_.line_of(c.begin));
      const bool comma = n.codes && i + 1 < n.children.size();
      line(indent + kIndent, comma ? c.text + "," : keyed(c), c.trailing);
      run.last_line = std::max(src_.line_of(c.end > c.begin ? c.end - 1 : c.begin),
                               c.trailing ? c.trailing->line : 0);
    }
    for (const Comment* m : n.end_comments) comment(*m, indent + kIndent, run);
    line(indent, "}", n.trailing);
  }

  void container(const Node& n, std::size_t indent) {
    line(indent, n.text + " {", n.header_trailing);
    const std::vector<const Node*> items = order(n);
    align(items, indent + kIndent);
    Run run;
    for (const Node* c : items) element(*c, indent + kIndent, run);
    for (const Comment* m : n.end_comments) comment(*m, indent + kIndent, run);
    line(indent, "}", n.trailing);
  }

  const SourceText& src_;
  std::string out_;
  std::map<const Node*, std::size_t> pad_;  // the width each aligned item's key is padded to
};

// ---- the check that nothing changed -----------------------------------------------------------

// The AST as text without positions, `and`/`or` chains flattened: equal for a file and its
// formatted text.
void describe(const ast::Expr& e, std::string& out) {
  switch (e.kind) {
    case ast::Expr::Kind::Or:
    case ast::Expr::Kind::And: {
      out += e.kind == ast::Expr::Kind::Or ? "(or" : "(and";
      // Flatten nested chains of the same operator.
      std::vector<const ast::Expr*> stack;
      for (auto it = e.children.rbegin(); it != e.children.rend(); ++it) stack.push_back(&*it);
      while (!stack.empty()) {
        const ast::Expr* c = stack.back();
        stack.pop_back();
        if (c->kind == e.kind) {
          for (auto it = c->children.rbegin(); it != c->children.rend(); ++it)
            stack.push_back(&*it);
          continue;
        }
        out += ' ';
        describe(*c, out);
      }
      out += ')';
      return;
    }
    case ast::Expr::Kind::Not:
      out += "(not ";
      for (const auto& c : e.children) describe(c, out);
      out += ')';
      return;
    case ast::Expr::Kind::Test:
      out += "(test " + e.attr + " " + std::to_string(static_cast<int>(e.op)) + " " +
             list_text(e.values) + ")";
      return;
  }
}

std::string describe(const ast::File& f) {
  std::string out = f.version ? "version " + value_text(*f.version) + "\n" : std::string();
  auto settings = [&](const char* what, const std::vector<ast::Setting>& v) {
    for (const auto& s : v) out += std::string(what) + " " + setting(s) + "\n";
  };
  for (const auto& p : f.policies) {
    out += "policy " + quote_literal(p.name) +
           (p.base ? " extends " + quote_literal(p.base->text) : "") + "\n";
    settings("tool", p.tool);
    settings("limits", p.limits);
    settings("breaker", p.breaker);
    settings("throttle", p.throttle);
    out += "has " + std::to_string(p.has_breaker) + std::to_string(p.has_throttle) + "\n";
    for (const auto* lines : {&p.backoff, &p.schedules})
      for (const auto& b : *lines) {
        out += "backoff " + (b.name.empty() ? "" : b.name + " ") + b.kind + "\n";
        settings(" param", b.params);
      }
    out += "codes " + list_text(p.codes) + "\n";
    for (const auto* rules : {&p.rules, &p.defaults})
      for (const auto& r : *rules) {
        out += "rule " + r.name + " " + route(r.route) + " ";
        if (r.when) describe(*r.when, out);
        out += "\n";
      }
    for (const auto& a : p.assertions) {
      out += "assert " + value_text(a.kind) + " " + list_text(a.routes) + " ";
      describe(a.when, out);
      out += "\n";
    }
    for (const auto& w : p.waivers)
      out += "waive " + value_text(w.name) + " " + quote_literal(w.reason) + "\n";
    for (const auto& h : p.hit) out += "hit " + value_text(h) + "\n";
    for (const auto& m : p.mappings)
      out += "map " + value_text(m.protocol) + " " + value_text(m.key) + " " + value_text(m.code) +
             "\n";
    for (const auto& b : p.bounds) out += bound(b) + "\n";
    for (const auto& t : p.tests)
      out += "test " + quote_literal(t.name) + " " + t.envelope + " " + t.context.value_or("-") +
             " " + expectation(t.expect) + "\n";
    out += "items " + std::to_string(p.items.size()) + "\n";
  }
  return out;
}

std::vector<std::string> comment_texts(const SourceText& src) {
  std::vector<std::string> out;
  for (const auto& c : src.comments()) out.push_back(c.text);
  std::sort(out.begin(), out.end());
  return out;
}

// What a file's text compiles to, as compile_paths() compiles that file alone (without the
// analysis, which changes no table): `policy "NAME" HASH` for each policy, or, when it does not
// compile, `CODE: MESSAGE` for each error (positions left out: formatting moves them).
std::vector<std::string> compiled_form(std::string_view text, std::string_view path,
                                       const CompileOptions& options) {
  const Result<Bundle> r =
      detail::compile_sources({{std::string(path), std::string(text)}}, options, true, false);
  std::vector<std::string> out;
  if (r.ok())
    for (const Policy& p : r->policies())
      out.push_back("policy " + recourse::quoted(p.name()) + " " + std::string(p.hash()));
  else
    for (const Diagnostic& d : r.diagnostics())
      if (d.severity == Severity::Error) out.push_back(d.code + ": " + d.message);
  return out;
}

// E099: the formatter's own fault (the file is left as it is), at `pos` of the file.
void internal_error(std::vector<Diagnostic>& out, const detail::Sources& file, ast::Pos pos,
                    const std::string& message) {
  detail::report(out, file, pos, Severity::Error, "E099",
                 "internal error while formatting: " + message,
                 "the file is left as it is; please report this");
}

}  // namespace

Status verify_format(std::string_view original, std::string_view formatted, std::string_view path,
                     const CompileOptions& options) {
  std::vector<Diagnostic> diagnostics;
  const detail::Sources file{{path, original}};
  try {
    if (formatted.size() > options.max_source_bytes) {
      Diagnostic& d = diagnostics.emplace_back(detail::too_large(path, formatted.size(), options));
      d.message = "formatted, the file would be " + std::to_string(formatted.size()) +
                  " bytes; the limit is " + std::to_string(options.max_source_bytes);
      d.help = "the file is left as it is; split it, or raise CompileOptions::max_source_bytes";
      return Status::failure(std::move(diagnostics));
    }
    const auto before = compiled_form(original, path, options);
    const auto after = compiled_form(formatted, path, options);
    if (before == after) return {};
    const auto [b, a] = std::mismatch(before.begin(), before.end(), after.begin(), after.end());
    internal_error(diagnostics, file, {},
                   "the formatted text compiles differently (" +
                       (b == before.end() ? std::string("nothing") : *b) + " before, " +
                       (a == after.end() ? std::string("nothing") : *a) + " after)");
  } catch (const std::exception& e) {
    internal_error(diagnostics, file, {}, e.what());
  } catch (...) {
    internal_error(diagnostics, file, {}, "unknown exception");
  }
  return Status::failure(std::move(diagnostics));
}

Result<std::string> format(std::string_view text, std::string_view path,
                           const CompileOptions& options) {
  std::vector<Diagnostic> diagnostics;
  const detail::Sources sources{{path, text}};
  auto internal = [&](ast::Pos pos, const std::string& message) {
    internal_error(diagnostics, sources, pos, message);
    return Result<std::string>::failure(std::move(diagnostics));
  };
  try {
    if (detail::over_limit(path, text.size(), options, diagnostics))
      return Result<std::string>::failure(std::move(diagnostics));
    const auto file = detail::parse_source(sources, 0, options.max_depth, diagnostics);
    if (!file) return Result<std::string>::failure(std::move(diagnostics));
    const SourceText src(text);
    Node root = Builder(src).file(*file);
    std::vector<const Comment*> comments;
    for (const auto& c : src.comments()) comments.push_back(&c);
    attach(root, comments);
    std::string out = Printer(src).file(root);

    // The printed text must give back the same policies and the same comments.
    std::optional<grammar::SyntaxError> again;
    const auto reparsed = grammar::parse(path, out, options.max_depth, again);
    if (!reparsed) return internal({}, "the formatted text does not parse");
    if (describe(*reparsed) != describe(*file))
      return internal({}, "the formatted text means something else");
    if (comment_texts(SourceText(out)) != comment_texts(src))
      return internal({}, "a comment was lost or changed");
    if (out != text)
      if (Status verified = verify_format(text, out, path, options); !verified.ok())
        return Result<std::string>::failure(std::move(verified).diagnostics());
    return {std::move(out), std::move(diagnostics)};
  } catch (const Unformattable& e) {
    return internal(e.pos, e.message);
  } catch (const std::exception& e) {
    return internal({}, e.what());
  } catch (...) {
    return internal({}, "unknown exception");
  }
}

}  // namespace recourse
