// The .recourse policy language, version 1, as a PEGTL grammar.
//
// Stage: text -> parse tree (grammar/parse.cpp turns the tree into the AST of grammar/ast.hpp).
// Each rule carries the EBNF production it implements; docs/language.md lists the same EBNF.
// Keywords are matched with TAO_PEGTL_KEYWORD so `retry` never matches a prefix of `retryx`.
// `must<>` appears only after the input has committed to one alternative; the messages for the
// points where parsing can fail live in `errors` at the bottom and become diagnostic E001.
// A test asserts that tao::pegtl::analyze<file>() reports no rule that can loop without input.
#pragma once

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/analyze_traits.hpp>

namespace recourse::grammar {

namespace pg = tao::pegtl;

// comment = "#" { any char but a line break } ;   (a line ends at LF, CR LF or CR: lines.hpp)
struct comment : pg::seq<pg::one<'#'>, pg::star<pg::not_one<'\n', '\r'>>> {};
// _ = { whitespace | comment } ;
struct sep : pg::star<pg::sor<pg::space, comment>> {};

// Keywords: identifiers reserved by the language.
struct kw_version : TAO_PEGTL_KEYWORD("version") {};
struct kw_policy : TAO_PEGTL_KEYWORD("policy") {};
struct kw_tool : TAO_PEGTL_KEYWORD("tool") {};
struct kw_limits : TAO_PEGTL_KEYWORD("limits") {};
struct kw_backoff : TAO_PEGTL_KEYWORD("backoff") {};
struct kw_codes : TAO_PEGTL_KEYWORD("codes") {};
struct kw_breaker : TAO_PEGTL_KEYWORD("breaker") {};
struct kw_throttle : TAO_PEGTL_KEYWORD("throttle") {};
struct kw_rule : TAO_PEGTL_KEYWORD("rule") {};
struct kw_when : TAO_PEGTL_KEYWORD("when") {};
struct kw_default : TAO_PEGTL_KEYWORD("default") {};
struct kw_assert : TAO_PEGTL_KEYWORD("assert") {};
struct kw_waive : TAO_PEGTL_KEYWORD("waive") {};
struct kw_hit : TAO_PEGTL_KEYWORD("hit") {};
struct kw_map : TAO_PEGTL_KEYWORD("map") {};
struct kw_and : TAO_PEGTL_KEYWORD("and") {};
struct kw_or : TAO_PEGTL_KEYWORD("or") {};
struct kw_not : TAO_PEGTL_KEYWORD("not") {};
struct kw_in : TAO_PEGTL_KEYWORD("in") {};
struct kw_is : TAO_PEGTL_KEYWORD("is") {};
struct kw_absent : TAO_PEGTL_KEYWORD("absent") {};
struct kw_present : TAO_PEGTL_KEYWORD("present") {};
struct kw_arguments : TAO_PEGTL_KEYWORD("arguments") {};
struct kw_extends : TAO_PEGTL_KEYWORD("extends") {};
struct kw_test : TAO_PEGTL_KEYWORD("test") {};
struct kw_envelope : TAO_PEGTL_KEYWORD("envelope") {};
struct kw_context : TAO_PEGTL_KEYWORD("context") {};
struct kw_expect : TAO_PEGTL_KEYWORD("expect") {};
struct kw_delay : TAO_PEGTL_KEYWORD("delay") {};
struct kw_exhausted : TAO_PEGTL_KEYWORD("exhausted") {};
struct kw_sequence : TAO_PEGTL_KEYWORD("sequence") {};
struct kw_with : TAO_PEGTL_KEYWORD("with") {};
struct kw_attempts : TAO_PEGTL_KEYWORD("attempts") {};
struct keyword : pg::sor<kw_version, kw_policy, kw_rule, kw_when, kw_default, kw_assert, kw_waive,
                         kw_and, kw_or, kw_not, kw_in, kw_is, kw_absent, kw_present> {};

// ident = letter_ { letter_ | digit } ;
struct ident : pg::identifier {};
// name = ident - keyword ;
struct name : pg::seq<pg::not_at<keyword>, ident> {};

// string = '"' { char | escape } '"' ;   escape = "\" ( '"' | "\" | "n" | "t" ) ;
struct escape : pg::seq<pg::one<'\\'>, pg::one<'"', '\\', 'n', 't'>> {};
// Strings are UTF-8: a byte sequence that is not valid UTF-8 ends the string, and the missing
// closing quote is then the error (E001).
struct string_char : pg::sor<escape, pg::utf8::not_one<'"', '\\', '\n', '\r'>> {};
struct string_close : pg::one<'"'> {};
struct string_lit : pg::seq<pg::one<'"'>, pg::star<string_char>, pg::must<string_close>> {};

// number = [ "-" ] digit { digit } [ "." digit { digit } ] [ unit ] ;  unit = "ms" | "s" | "m" |
// "h" ;
// (the checker accepts the units ms, s, m and h; any other letters are a clear E025 there)
struct unit : pg::plus<pg::alpha> {};
struct number : pg::seq<pg::opt<pg::one<'-'>>, pg::plus<pg::digit>,
                        pg::opt<pg::one<'.'>, pg::plus<pg::digit>>, pg::opt<unit>,
                        pg::not_at<pg::identifier_other>> {};

// value = string | number | ident ;
struct value_ident : ident {};
struct value : pg::sor<string_lit, number, value_ident> {};
// list = "[" [ value { "," value } ] "]" ;
struct comma : pg::seq<sep, pg::one<','>, sep> {};
struct value_list : pg::seq<pg::one<'['>, sep, pg::opt<pg::list<value, comma>>, sep, pg::one<']'>> {
};

// setting = ident "=" ( list | value ) [ string ] ;   (* the string: on_exhausted's target *)
struct setting_key : ident {};
struct setting_target : string_lit {};
struct setting : pg::seq<setting_key, sep, pg::must<pg::one<'='>>, sep,
                         pg::must<pg::sor<value_list, value>>, pg::opt<sep, setting_target>> {};
// block = "{" { setting } "}" ;
struct block_open : pg::one<'{'> {};
struct block_close : pg::one<'}'> {};
struct settings
    : pg::seq<pg::must<block_open>, sep, pg::star<setting, sep>, pg::must<block_close>> {};

// tool_block = "tool" block ;   limits_block = "limits" block ;
// breaker_block = "breaker" block ;   throttle_block = "throttle" block ;
struct tool_block : pg::seq<kw_tool, sep, settings> {};
struct limits_block : pg::seq<kw_limits, sep, settings> {};
struct breaker_block : pg::seq<kw_breaker, sep, settings> {};
struct throttle_block : pg::seq<kw_throttle, sep, settings> {};
// backoff = "backoff" ident { ident value } ;
struct backoff_kind : ident {};
// A backoff line ends where the next item starts.
struct item_keyword : pg::sor<kw_tool, kw_limits, kw_breaker, kw_throttle, kw_backoff, kw_codes,
                              kw_rule, kw_default, kw_assert, kw_waive, kw_map, kw_hit, kw_test> {};
struct param_name : pg::seq<pg::not_at<item_keyword>, name> {};
struct backoff_param : pg::seq<param_name, sep, pg::must<value>> {};
struct backoff_decl
    : pg::seq<kw_backoff, sep, pg::must<backoff_kind>, pg::star<sep, backoff_param>> {};
// schedule = "backoff" ident "{" ident { ident value } "}" ;   (* a named backoff *)
// Tried before `backoff`: the `{` after the name is what tells them apart.
// schedule_open has no error message: without it, the input is a backoff line instead.
struct schedule_name : ident {};
struct schedule_open : pg::one<'{'> {};
struct schedule_close : pg::one<'}'> {};
struct schedule_decl
    : pg::seq<kw_backoff, sep, schedule_name, sep, schedule_open, sep, pg::must<backoff_kind>,
              pg::star<sep, backoff_param>, sep, pg::must<schedule_close>> {};
// codes = "codes" "{" { ident [","] } "}" ;
struct code_name : ident {};
struct codes_close : pg::one<'}'> {};
struct codes_decl
    : pg::seq<kw_codes, sep, pg::must<block_open>, sep,
              pg::star<code_name, sep, pg::opt<pg::one<','>, sep>>, pg::must<codes_close>> {};

// Conditions.
//   cond    = and_expr { "or" and_expr } ;
//   and_expr = unary { "and" unary } ;
//   unary   = "not" unary | "(" cond ")" | test ;
//   test    = name ( cmp_op value | "in" "arguments" | "in" list | "is" ( "absent" | "present" ) )
//           | name ;                          (* bare: present and true / present *)
//   cmp_op  = "==" | "!=" | "<=" | ">=" | "<" | ">" ;
struct cond;
struct attr : name {};
struct cmp_op : pg::sor<TAO_PEGTL_STRING("=="), TAO_PEGTL_STRING("!="), TAO_PEGTL_STRING("<="),
                        TAO_PEGTL_STRING(">="), pg::one<'<'>, pg::one<'>'>> {};
struct compare : pg::seq<cmp_op, sep, pg::must<value>> {};
struct in_arguments : kw_arguments {};
struct in_test : pg::seq<kw_in, sep, pg::must<pg::sor<in_arguments, value_list>>> {};
struct is_what : pg::sor<kw_absent, kw_present> {};
struct is_test : pg::seq<kw_is, sep, pg::must<is_what>> {};
struct test : pg::seq<attr, pg::opt<sep, pg::sor<compare, in_test, is_test>>> {};
struct group : pg::seq<pg::one<'('>, sep, pg::must<cond>, sep, pg::must<pg::one<')'>>> {};
struct unary;
struct not_expr : pg::seq<kw_not, sep, pg::must<unary>> {};
struct unary : pg::sor<not_expr, group, test> {};
struct and_expr : pg::seq<unary, pg::star<sep, kw_and, sep, pg::must<unary>>> {};
struct cond : pg::seq<and_expr, pg::star<sep, kw_or, sep, pg::must<and_expr>>> {};

// route = route_kind [ string ] [ string ] [ "with" options ] ;   route_kind = ident ;
// options = "backoff" ident [ "attempts" value ] | "attempts" value ;
struct arrow : TAO_PEGTL_STRING("->") {};
struct route_kind : ident {};
struct route_arg : string_lit {};
struct route_schedule : ident {};
struct route_attempts : value {};
struct route_attempts_option : pg::seq<kw_attempts, sep, pg::must<route_attempts>> {};
struct route_backoff_option
    : pg::seq<kw_backoff, sep, pg::must<route_schedule>, pg::opt<sep, route_attempts_option>> {};
struct route_option : pg::sor<route_backoff_option, route_attempts_option> {};
struct route_with : pg::seq<kw_with, sep, pg::must<route_option>> {};
struct route : pg::seq<route_kind, pg::opt<sep, route_arg>, pg::opt<sep, route_arg>,
                       pg::opt<sep, route_with>> {};
// rule = "rule" name [ "when" cond ] "->" route ;
struct rule_name : name {};
struct rule_decl
    : pg::seq<kw_rule, sep, pg::must<rule_name>, sep, pg::opt<kw_when, sep, pg::must<cond>, sep>,
              pg::must<arrow>, sep, pg::must<route>> {};
// default = "default" "->" route ;
struct default_decl : pg::seq<kw_default, sep, pg::must<arrow>, sep, pg::must<route>> {};

// assert = "assert" ident ( ident | list ) "when" cond ;   e.g. assert never retry when code ==
// PERMISSION
struct assert_kind : ident {};
struct assert_routes : pg::sor<value_list, value_ident> {};
struct assert_when : kw_when {};
struct assert_decl : pg::seq<kw_assert, sep, pg::must<assert_kind>, sep, pg::must<assert_routes>,
                             sep, pg::must<assert_when>, sep, pg::must<cond>> {};
// bound = "assert" "sequence" ident [ ident ] "<=" value ;
//   e.g. assert sequence total_wait <= 2m; assert sequence calls_after TIMEOUT <= 2
struct bound_metric : ident {};
struct bound_code : ident {};
struct bound_le : TAO_PEGTL_STRING("<=") {};
struct bound_limit : value {};
struct bound_decl
    : pg::seq<kw_assert, sep, kw_sequence, sep, pg::must<bound_metric>, sep,
              pg::opt<bound_code, sep>, pg::must<bound_le>, sep, pg::must<bound_limit>> {};
// waive = "waive" ident string ;   e.g. waive context_overflow_retry "the tool trims its input"
struct waiver_name : ident {};
struct waiver_reason : string_lit {};
struct waive_decl : pg::seq<kw_waive, sep, pg::must<waiver_name>, sep, pg::must<waiver_reason>> {};
// hit = "hit" ident ;   first (default) | safest | unique
struct hit_policy : ident {};
struct hit_decl : pg::seq<kw_hit, sep, pg::must<hit_policy>> {};
// map = "map" ident value "->" ident ;   e.g. map http 409 -> BOOKING_TAKEN (an adapter override)
struct map_protocol : ident {};
struct map_arrow : arrow {};
struct map_code : ident {};
struct map_decl : pg::seq<kw_map, sep, pg::must<map_protocol>, sep, pg::must<value>, sep,
                          pg::must<map_arrow>, sep, pg::must<map_code>> {};

// json = "{" ... "}" ;   a JSON object kept verbatim: braces balance outside JSON strings (with
// their escapes); the envelope and context readers parse it. Matched by a loop, not by
// recursion, so nesting cannot exhaust the stack.
struct json_object {
  using rule_t = json_object;
  using subs_t = pg::type_list<>;
  template <typename ParseInput>
  static bool match(ParseInput& in) {
    if (in.empty() || in.peek_char() != '{') return false;
    std::size_t depth = 0, i = 0;
    bool in_string = false;
    for (; i < in.size(i + 1); ++i) {
      const char c = in.peek_char(i);
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        in.bump(i + 1);
        return true;
      }
    }
    return false;
  }
};
}  // namespace recourse::grammar

// For analyze(): a JSON object consumes input whenever it succeeds.
template <typename Name>
struct tao::pegtl::analyze_traits<Name, recourse::grammar::json_object>
    : tao::pegtl::analyze_any_traits<> {};

namespace recourse::grammar {

// expect = "expect" route_kind [ string ] { "rule" ( name | string ) | "delay" number [ ".." number
// ]
//        | "exhausted" ident } ;
struct expect_route : ident {};
struct expect_target : string_lit {};
struct expect_rule_name : pg::sor<string_lit, ident> {};
struct expect_rule : pg::seq<kw_rule, sep, pg::must<expect_rule_name>> {};
struct delay_min : number {};
struct delay_max : number {};
struct expect_delay : pg::seq<kw_delay, sep, pg::must<delay_min>,
                              pg::opt<sep, TAO_PEGTL_STRING(".."), sep, pg::must<delay_max>>> {};
struct budget_name : ident {};
struct expect_exhausted : pg::seq<kw_exhausted, sep, pg::must<budget_name>> {};
struct expect_decl : pg::seq<kw_expect, sep, pg::must<expect_route>, pg::opt<sep, expect_target>,
                             pg::star<sep, pg::sor<expect_rule, expect_delay, expect_exhausted>>> {
};
// test = "test" string "{" "envelope" json [ "context" json ] expect "}" ;
struct test_name : string_lit {};
struct envelope_json : json_object {};
struct context_json : json_object {};
struct test_envelope : pg::seq<kw_envelope, sep, pg::must<envelope_json>> {};
struct test_context : pg::seq<kw_context, sep, pg::must<context_json>> {};
struct test_close : pg::one<'}'> {};
struct test_decl : pg::seq<kw_test, sep, pg::must<test_name>, sep, pg::must<block_open>, sep,
                           pg::must<test_envelope>, sep, pg::opt<test_context, sep>,
                           pg::must<expect_decl>, sep, pg::must<test_close>> {};

// item = tool_block | limits_block | breaker_block | throttle_block | schedule | backoff | codes |
// rule
//      | default | bound | assert | waive | map | hit | test ;
struct item : pg::sor<tool_block, limits_block, breaker_block, throttle_block, schedule_decl,
                      backoff_decl, codes_decl, rule_decl, default_decl, bound_decl, assert_decl,
                      waive_decl, map_decl, hit_decl, test_decl> {};
// policy = "policy" string [ "extends" string ] "{" { item } "}" ;
struct policy_name : string_lit {};
struct base_name : string_lit {};
struct extends_clause : pg::seq<kw_extends, sep, pg::must<base_name>> {};
struct policy_close : pg::one<'}'> {};
struct policy_decl
    : pg::seq<kw_policy, sep, pg::must<policy_name>, sep, pg::opt<extends_clause, sep>,
              pg::must<block_open>, sep, pg::star<item, sep>, pg::must<policy_close>> {};
// version = "version" number ;
struct version_number : pg::plus<pg::digit> {};
struct version_decl : pg::seq<kw_version, sep, pg::must<version_number>> {};
// file = [ bom ] [ version ] { policy } EOF ;   (* bom: EF BB BF, UTF-8's byte-order mark *)
struct file : pg::seq<pg::opt<pg::utf8::bom>, sep, pg::opt<version_decl, sep>,
                      pg::star<policy_decl, sep>, pg::must<pg::eof>> {};

// Messages for every rule that can fail under must<>: the text after "expected".
template <typename Rule>
inline constexpr const char* error_message = nullptr;
template <>
inline constexpr const char* error_message<pg::one<'='>> = "'=' after the setting name";
template <>
inline constexpr const char* error_message<pg::sor<value_list, value>> = "a value or a [list]";
template <>
inline constexpr const char* error_message<block_open> = "'{'";
template <>
inline constexpr const char* error_message<block_close> = "a setting 'name = value' or '}'";
template <>
inline constexpr const char* error_message<codes_close> = "a code name or '}'";
template <>
inline constexpr const char* error_message<assert_kind> = "'never' or 'always' after 'assert'";
template <>
inline constexpr const char* error_message<assert_routes> = "a route or a [list] of routes";
template <>
inline constexpr const char* error_message<assert_when> = "'when' and a condition";
template <>
inline constexpr const char* error_message<hit_policy> = "a hit policy (first, safest, unique)";
template <>
inline constexpr const char* error_message<waiver_name> = "the name of the invariant to waive";
template <>
inline constexpr const char* error_message<waiver_reason> =
    "the reason for the waiver as a \"string\"";
template <>
inline constexpr const char* error_message<map_protocol> =
    "a protocol (http, grpc, jsonrpc, mcp) after 'map'";
template <>
inline constexpr const char* error_message<map_arrow> = "'->' and the code to map to";
template <>
inline constexpr const char* error_message<map_code> = "a code name after '->'";
template <>
inline constexpr const char* error_message<string_close> =
    "'\"' to close the string (strings are one line of valid UTF-8; escapes: \\\" \\\\ \\n \\t)";
template <>
inline constexpr const char* error_message<backoff_kind> =
    "a backoff kind (constant, linear, exponential)";
template <>
inline constexpr const char* error_message<schedule_close> =
    "'}' to close the named backoff (its kind, then parameters as on a backoff line)";
template <>
inline constexpr const char* error_message<route_option> =
    "'backoff NAME' or 'attempts N' after 'with'";
template <>
inline constexpr const char* error_message<route_schedule> = "the name of a backoff schedule";
template <>
inline constexpr const char* error_message<route_attempts> = "a count of attempts";
template <>
inline constexpr const char* error_message<value> =
    "a value (name, number, duration or \"string\")";
template <>
inline constexpr const char* error_message<cond> = "a condition";
template <>
inline constexpr const char* error_message<pg::one<')'>> = "')'";
template <>
inline constexpr const char* error_message<pg::sor<in_arguments, value_list>> =
    "'arguments' or a [list] after 'in'";
template <>
inline constexpr const char* error_message<is_what> = "'absent' or 'present' after 'is'";
template <>
inline constexpr const char* error_message<unary> = "a condition after 'not', 'and' or 'or'";
template <>
inline constexpr const char* error_message<and_expr> = "a condition after 'or'";
template <>
inline constexpr const char* error_message<rule_name> =
    "a rule name (a name that is not a keyword)";
template <>
inline constexpr const char* error_message<arrow> = "'->' and a route (or 'when' and a condition)";
template <>
inline constexpr const char* error_message<route> =
    "a route (retry, repair, authorize, replace \"tool\", degrade, escalate, stop)";
template <>
inline constexpr const char* error_message<policy_name> = "the policy's name as a \"string\"";
template <>
inline constexpr const char* error_message<policy_close> =
    "a policy item (tool, limits, breaker, throttle, backoff, codes, rule, default, assert, waive, "
    "map, hit, test) or '}'";
template <>
inline constexpr const char* error_message<bound_metric> =
    "a sequence metric (total_wait, max_delay, calls, calls_after CODE, repairs)";
template <>
inline constexpr const char* error_message<bound_le> = "'<=' and the bound";
template <>
inline constexpr const char* error_message<bound_limit> = "a bound (a count or a duration)";
template <>
inline constexpr const char* error_message<base_name> = "the base policy's name as a \"string\"";
template <>
inline constexpr const char* error_message<test_name> = "the test's name as a \"string\"";
template <>
inline constexpr const char* error_message<test_envelope> =
    "'envelope' and the envelope as a JSON object";
template <>
inline constexpr const char* error_message<envelope_json> =
    "a JSON object {...} with balanced braces";
template <>
inline constexpr const char* error_message<context_json> =
    "a JSON object {...} with balanced braces";
template <>
inline constexpr const char* error_message<expect_decl> =
    "'expect' and the route the test expects (or 'context' before it)";
template <>
inline constexpr const char* error_message<expect_route> = "a route after 'expect'";
template <>
inline constexpr const char* error_message<expect_rule_name> = "a rule name after 'rule'";
template <>
inline constexpr const char* error_message<delay_min> = "a duration after 'delay'";
template <>
inline constexpr const char* error_message<delay_max> = "a duration after '..'";
template <>
inline constexpr const char* error_message<budget_name> =
    "a budget after 'exhausted' (attempts, repairs, cost, deadline, retry_tokens, repeats)";
template <>
inline constexpr const char* error_message<test_close> =
    "'}' to close the test (or rule, delay, exhausted after the route)";
template <>
inline constexpr const char* error_message<version_number> = "a language version number";
template <>
inline constexpr const char* error_message<pg::eof> =
    "'policy' (or 'version' at the top of the file)";

struct errors {
  template <typename Rule>
  static constexpr const char* message = error_message<Rule>;
};

}  // namespace recourse::grammar
