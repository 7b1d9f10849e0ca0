#include "score/matrix.h"

#include <stdexcept>

namespace dirigo::score {

const char* status_name(Status s) {
  switch (s) {
    case Status::NotRun: return "not-run";
    case Status::Ok: return "ok";
    case Status::Crash: return "crash";
    case Status::Timeout: return "timeout";
    case Status::Nonfinite: return "nonfinite";
  }
  return "?";
}

Status parse_status(const std::string& s) {
  if (s == "ok") return Status::Ok;
  if (s == "crash") return Status::Crash;
  if (s == "timeout") return Status::Timeout;
  if (s == "nonfinite") return Status::Nonfinite;
  throw std::runtime_error("unknown run status '" + s + "' (expected ok, crash, timeout or nonfinite)");
}

bool fails(const Outcome& o, double tol, bool fp32_reference) {
  if (o.status != Status::Ok && o.status != Status::Nonfinite) return false;
  return o.nonfinite_mismatch || (fp32_reference ? o.t_eq32 : o.t_eq) > tol;
}

bool passes(const Outcome& o, double tol, bool fp32_reference) {
  if (o.status != Status::Ok && o.status != Status::Nonfinite) return false;
  return !o.nonfinite_mismatch && (fp32_reference ? o.t_eq32 : o.t_eq) <= tol;
}

bool quarantined(const Problem& p, size_t m) {
  for (const Outcome& o : p.runs.at(m))
    if (o.status == Status::Crash || o.status == Status::Timeout) return true;
  return false;
}

}  // namespace dirigo::score
