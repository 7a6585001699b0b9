// Adapters, HTTP dates (RFC 9110 section 5.6.7); see http_date.hpp.
#include "adapters/http_date.hpp"

#include <array>
#include <cctype>
#include <tuple>

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

struct CivilDate {
  std::int64_t year;
  unsigned month, day;  // 1..12, 1..31
};

// The civil date of a day count since 1970-01-01, days_from_civil's inverse (same source).
CivilDate civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2), m, doy - (153 * mp + 2) / 5 + 1};
}

constexpr std::int64_t kDayMs = 86'400'000;

// The year of an RFC 850 date, whose year has two digits `yy`, at time of day `time_ms`.
// Section 5.6.7: a timestamp that appears more than 50 years in the future is the most recent
// past year with those digits. So the year is the latest one ending in `yy` whose timestamp is
// at most 50 years after `now_ms` (the same month, day and time of day 50 years on); without a
// clock, 00-69 are 2000-2069 and 70-99 are 1970-1999 (POSIX strptime's %y).
std::int64_t rfc850_year(int yy, unsigned month, unsigned day, std::int64_t time_ms,
                         std::optional<std::int64_t> now_ms) {
  if (!now_ms) return yy < 70 ? 2000 + yy : 1900 + yy;
  const std::int64_t now_days = *now_ms / kDayMs - (*now_ms % kDayMs < 0);
  const std::int64_t now_time = *now_ms - now_days * kDayMs;
  const CivilDate now = civil_from_days(now_days);
  const std::int64_t limit = now.year + 50;
  std::int64_t year = limit - ((limit - yy) % 100 + 100) % 100;
  if (year == limit && std::tie(month, day, time_ms) > std::tie(now.month, now.day, now_time))
    year -= 100;
  return year;
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

// An HTTP-date in any of its three forms, as ms since the epoch; an RFC 850 date's two-digit
// year is read against `now_ms` (rfc850_year()). nullopt when it is none of them, or beyond
// what ms since the epoch can hold.
std::optional<std::int64_t> http_date_ms(std::string_view text,
                                         std::optional<std::int64_t> now_ms) {
  int wday = 0, day = 0, month = 0, h = 0, m = 0, s = 0;
  std::int64_t year = 0;
  bool ok = false;
  {  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    DateCursor c(text);
    int yyyy = 0;
    ok = c.one_of(kDays, wday) && c.lit(", ") && c.number(2, day) && c.lit(" ") &&
         c.one_of(kMonths, month) && c.lit(" ") && c.number(4, yyyy) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
    year = yyyy;
  }
  if (!ok) {  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    DateCursor c(text);
    int yy = 0;
    ok = c.one_of(kLongDays, wday) && c.lit(", ") && c.number(2, day) && c.lit("-") &&
         c.one_of(kMonths, month) && c.lit("-") && c.number(2, yy) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
    if (ok)
      year = rfc850_year(yy, static_cast<unsigned>(month + 1), static_cast<unsigned>(day),
                         ((std::int64_t{h} * 60 + m) * 60 + s) * 1000, now_ms);
  }
  if (!ok) {  // asctime: Sun Nov  6 08:49:37 1994
    DateCursor c(text);
    int yyyy = 0;
    ok = c.one_of(kDays, wday) && c.lit(" ") && c.one_of(kMonths, month) && c.lit(" ") &&
         (c.lit(" ") ? c.number(1, day) : c.number(2, day)) && c.lit(" ") && c.time(h, m, s) &&
         c.lit(" ") && c.number(4, yyyy) && c.done();
    year = yyyy;
  }
  if (!ok) return std::nullopt;
  static constexpr int kMonthDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day < 1 || day > kMonthDays[month] || (month == 1 && day == 29 && !leap) || h > 23 ||
      m > 59 || s > 60)
    return std::nullopt;
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month + 1), static_cast<unsigned>(day));
  if (days >= kSaturatedMs / kDayMs || days <= -(kSaturatedMs / kDayMs)) return std::nullopt;
  return days * kDayMs + ((std::int64_t{h} * 60 + m) * 60 + s) * 1000;
}

}  // namespace recourse::detail::adapt
