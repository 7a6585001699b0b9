// The AST as policy text (print.hpp).
#include "print.hpp"

namespace recourse::grammar {
namespace {

const char* op_text(ast::Op op) {
  switch (op) {
    case ast::Op::Eq:
      return " == ";
    case ast::Op::Ne:
      return " != ";
    case ast::Op::Lt:
      return " < ";
    case ast::Op::Le:
      return " <= ";
    case ast::Op::Gt:
      return " > ";
    case ast::Op::Ge:
      return " >= ";
    default:
      return "";
  }
}

// Binding strength: `not` binds tightest, then `and`, then `or`. A child is parenthesized only
// when it binds looser than its context requires; `a or (b or c)` prints as `a or b or c`.
enum Prec { kOr, kAnd, kNot };

void write_condition(const ast::Expr& e, Prec context, std::string& out) {
  switch (e.kind) {
    case ast::Expr::Kind::Or:
    case ast::Expr::Kind::And: {
      const bool is_or = e.kind == ast::Expr::Kind::Or;
      const Prec mine = is_or ? kOr : kAnd;
      const bool paren = context > mine;
      if (paren) out += '(';
      for (std::size_t i = 0; i < e.children.size(); ++i) {
        if (i) out += is_or ? " or " : " and ";
        write_condition(e.children[i], mine, out);
      }
      if (paren) out += ')';
      return;
    }
    case ast::Expr::Kind::Not:
      out += "not ";
      if (!e.children.empty()) write_condition(e.children[0], kNot, out);
      return;
    case ast::Expr::Kind::Test:
      out += e.attr;
      switch (e.op) {
        case ast::Op::InList:
          out += " in " + list_text(e.values);
          break;
        case ast::Op::InArguments:
          out += " in arguments";
          break;
        case ast::Op::IsAbsent:
          out += " is absent";
          break;
        case ast::Op::IsPresent:
          out += " is present";
          break;
        case ast::Op::Truthy:
          break;
        default:
          out += op_text(e.op);
          if (!e.values.empty()) out += value_text(e.values[0]);
      }
      return;
  }
}

}  // namespace

std::string quote_literal(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string value_text(const ast::Value& v) {
  switch (v.kind) {
    case ast::Value::Kind::String:
      return quote_literal(v.text);
    case ast::Value::Kind::Number:
      return v.text + v.unit;
    default:
      return v.text;
  }
}

std::string list_text(const std::vector<ast::Value>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + value_text(values[i]);
  return out + "]";
}

std::string condition_text(const ast::Expr& e) {
  std::string out;
  write_condition(e, kOr, out);
  return out;
}

}  // namespace recourse::grammar
