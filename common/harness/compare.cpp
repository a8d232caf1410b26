#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace course {

Tolerance tolerance_for(DType t, double magnitude) {
  double m = std::max(1.0, magnitude);
  switch (t) {
    case DType::f32:
      return {1e-6 * m, 1e-5};
    case DType::f16:
      return {1e-5 * m, std::ldexp(1.0, -10)};
    case DType::bf16:
      return {1e-5 * m, std::ldexp(1.0, -7)};
    case DType::u8:  // masks and targets are inputs, never compared
    case DType::i32:
      return {0, 0};
  }
  return {0, 0};
}

bool element_ok(double got, double ref, Tolerance tol) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  if (ref == 0) return got == 0;
  return std::fabs(got - ref) <= tol.atol + tol.rtol * std::fabs(ref);
}

CompareResult compare(const double* got, const double* ref, int64_t rows, int64_t cols, Tolerance tol,
                      const int64_t* row_ids, int max_report) {
  CompareResult r;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double g = got[i * cols + j], e = ref[i * cols + j];
      ++r.checked;
      if (std::isfinite(g) && std::isfinite(e)) {
        double abs_err = std::fabs(g - e);
        r.max_abs_err = std::max(r.max_abs_err, abs_err);
        // Relative error only where the relative part of the tolerance dominates: near zero
        // (a tiny probability flushed to 0) it says nothing.
        if (tol.rtol * std::fabs(e) >= tol.atol && e != 0)
          r.max_rel_err = std::max(r.max_rel_err, abs_err / std::fabs(e));
      }
      if (!element_ok(g, e, tol)) {
        ++r.failed;
        if (static_cast<int>(r.first.size()) < max_report) r.first.push_back({row_ids ? row_ids[i] : i, j, g, e});
      }
    }
  }
  return r;
}

void merge(CompareResult& a, const CompareResult& b, int max_report) {
  a.checked += b.checked;
  a.failed += b.failed;
  a.max_abs_err = std::max(a.max_abs_err, b.max_abs_err);
  a.max_rel_err = std::max(a.max_rel_err, b.max_rel_err);
  for (const auto& m : b.first)
    if (static_cast<int>(a.first.size()) < max_report) a.first.push_back(m);
}

std::string describe(const CompareResult& r) {
  std::ostringstream s;
  char buf[160];
  for (const auto& m : r.first) {
    if (m.row < 0)  // a column sum over every row (compare_col_sum)
      std::snprintf(buf, sizeof buf, "    col %lld (sum over every row): got %.9g, expected %.9g\n",
                    static_cast<long long>(m.col), m.got, m.expected);
    else
      std::snprintf(buf, sizeof buf, "    row %lld, col %lld: got %.9g, expected %.9g\n", static_cast<long long>(m.row),
                    static_cast<long long>(m.col), m.got, m.expected);
    s << buf;
  }
  if (r.failed > static_cast<int64_t>(r.first.size()))
    s << "    ... " << (r.failed - static_cast<int64_t>(r.first.size())) << " more\n";
  return s.str();
}

}  // namespace course
