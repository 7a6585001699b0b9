// Evaluation of one test on one attribute value: the single definition of what a test means,
// shared by the reference interpreter and the compiler (which evaluates it on one value per cell).
#pragma once

#include <algorithm>

#include "model/model.hpp"

namespace recourse::detail {

/// The truth of a Test condition for `slot`. A comparison on an absent value is false; `is
/// absent` is the only test an absent value passes.
inline bool eval_test(const Cond& test, const Slot& slot) noexcept {
  using ast::Op;
  if (test.op == Op::IsAbsent) return !slot.present;
  if (!slot.present) return false;
  const bool is_string = info(test.attr).type == Type::String;
  auto equals = [&](const Constant& c) {
    return is_string ? slot.str == c.str : slot.num == c.num;
  };
  switch (test.op) {
    case Op::IsPresent:
      return true;
    case Op::Truthy:
      return is_string || slot.num != 0;
    case Op::Eq:
      return equals(test.values[0]);
    case Op::Ne:
      return !equals(test.values[0]);
    case Op::Lt:
      return slot.num < test.values[0].num;
    case Op::Le:
      return slot.num <= test.values[0].num;
    case Op::Gt:
      return slot.num > test.values[0].num;
    case Op::Ge:
      return slot.num >= test.values[0].num;
    case Op::InList: {  // the values are sorted: a list of thousands costs a few compares
      const auto it = std::lower_bound(
          test.values.begin(), test.values.end(), slot, [&](const Constant& c, const Slot& s) {
            return is_string ? std::string_view(c.str) < s.str : c.num < s.num;
          });
      return it != test.values.end() && equals(*it);
    }
    default:
      return false;
  }
}

}  // namespace recourse::detail
