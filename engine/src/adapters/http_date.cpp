// Adapters, HTTP dates (RFC 9110 section 5.6.7); see http_date.hpp.
#include "adapters/http_date.hpp"

#include <array>
#include <cctype>

#include "adapters/text.hpp"

namespace recourse::detail::adapt {
namespace {

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

class DateCursor {
 public:
  explicit DateCursor(std::string_view s) : s_(s) {}
  bool lit(std::string_view t) {
    if (s_.substr(i_, t.size()) != t) return false;
    i_ += t.size();
    return true;
  }
  bool number(std::size_t n, int& out) {
    if (i_ + n > s_.size() || !all_digits(s_.substr(i_, n))) return false;
    out = static_cast<int>(digits_value(s_.substr(i_, n)));
    i_ += n;
    return true;
  }
  template <std::size_t N>
  bool one_of(const std::array<std::string_view, N>& words, int& index) {
    for (std::size_t k = 0; k < N; ++k)
      if (s_.substr(i_, words[k].size()) == words[k]) {
        // A short day name must not be the prefix of a long one ("Sun" of "Sunday").
        const std::size_t end = i_ + words[k].size();
        if (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) continue;
        index = static_cast<int>(k);
        i_ = end;
        return true;
      }
    return false;
  }
  bool time(int& h, int& m, int& s) {
    return number(2, h) && lit(":") && number(2, m) && lit(":") && number(2, s);
  }
  bool done() const { return i_ == s_.size(); }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDays = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

// An HTTP-date in any of its three forms, as ms since the epoch. A two-digit RFC 850 year more
// than 50 years ahead of `now_ms` is read in the past century (section 5.6.7).
std::optional<std::int64_t> http_date_ms(std::string_view text,
                                         std::optional<std::int64_t> now_ms) {
  int wday = 0, day = 0, month = 0, year = 0, h = 0, m = 0, s = 0;
  bool ok = false;
  {  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    DateCursor c(text);
    ok = c.one_of(kDays, wday) && c.lit(", ") && c.number(2, day) && c.lit(" ") &&
         c.one_of(kMonths, month) && c.lit(" ") && c.number(4, year) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
  }
  if (!ok) {  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    DateCursor c(text);
    int yy = 0;
    ok = c.one_of(kLongDays, wday) && c.lit(", ") && c.number(2, day) && c.lit("-") &&
         c.one_of(kMonths, month) && c.lit("-") && c.number(2, yy) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
    if (ok && now_ms) {
      const int now_year = static_cast<int>(1970 + *now_ms / 31'556'952'000);  // mean years
      year = (now_year / 100) * 100 + yy;
      if (year > now_year + 50) year -= 100;
    } else if (ok) {
      year = yy < 70 ? 2000 + yy : 1900 + yy;
    }
  }
  if (!ok) {  // asctime: Sun Nov  6 08:49:37 1994
    DateCursor c(text);
    ok = c.one_of(kDays, wday) && c.lit(" ") && c.one_of(kMonths, month) && c.lit(" ") &&
         (c.lit(" ") ? c.number(1, day) : c.number(2, day)) && c.lit(" ") && c.time(h, m, s) &&
         c.lit(" ") && c.number(4, year) && c.done();
  }
  if (!ok) return std::nullopt;
  static constexpr int kMonthDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day < 1 || day > kMonthDays[month] || (month == 1 && day == 29 && !leap) || h > 23 ||
      m > 59 || s > 60)
    return std::nullopt;
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month + 1), static_cast<unsigned>(day));
  return ((days * 24 + h) * 60 + m) * 60'000 + std::int64_t{s} * 1000;
}

}  // namespace recourse::detail::adapt
