// The location search's scheduling (class Search, check/search_internal.h): `jobs` workers take
// locations from one deterministic order and fill slots by position, with a progress line.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/io.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "check/search_internal.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "program/merge.h"
#include "smt/falsify.h"

namespace dirigo::check::detail {

// The slots in search order, up to the last one handed out (moved out, not copied: 10^6 of them).
std::deque<std::optional<Slot>> Search::run() {
  t0_ = Clock::now();
  std::vector<std::thread> threads;
  active_ = jobs_;
  for (size_t w = 0; w < jobs_; ++w) threads.emplace_back([this, w] { worker(w); });
  if (opt_.progress) {
    std::unique_lock lock(mu_);
    while (active_ > 0) {
      done_cv_.wait_for(lock, std::chrono::milliseconds(200));
      progress_line();
    }
  }
  for (auto& t : threads) t.join();
  if (opt_.progress && printed_) std::fprintf(stderr, "\r\033[K");
  if (error_) std::rethrow_exception(error_);
  auto filled = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s; });
  slots_.erase(filled, slots_.end());  // every slot up to the last handed out is filled
  return std::move(slots_);
}

// The next location to check and its position in the order, or nothing when the search is over.
std::optional<std::pair<size_t, Location>> Search::take() {
  std::lock_guard lock(mu_);
  if (stop_ || since(t0_) > opt_.budget_s) return std::nullopt;
  if (opt_.max_locations && handed_ >= opt_.max_locations) return std::nullopt;
  for (;;) {
    auto loc = order_.next();
    if (!loc) return std::nullopt;
    if (!settled_.empty()) {
      size_t& n = handed_of_output_[loc->output];
      if (settled_[loc->output] && n >= spot_) {
        bool rest_settled = true;  // nothing but settled outputs with their spots handed out: the search is over
        for (size_t o = 0; o < settled_.size() && rest_settled; ++o)
          rest_settled = settled_[o] && (handed_of_output_[o] >= spot_ || int64_t(handed_of_output_[o]) >= report_.outputs[o].numel);
        if (rest_settled) return std::nullopt;
        continue;
      }
      ++n;
    }
    slots_.emplace_back();
    return std::make_pair(handed_++, *loc);
  }
}

void Search::worker(size_t) {
  try {
    std::unique_ptr<ir::Context> own_ctx;
    std::unique_ptr<Lowering> own_ref, own_cand;
    // The numeric evaluators of a worker's own lowerings are keyed by their addresses: they go before them
    // (a new lowering may be allocated where an old one was).
    auto forget_evaluators = [&] {
      std::lock_guard lock(mu_);
      auto mine = [&](const auto& e) {
        return e.first.first && (e.first.first == own_ref.get() || e.first.first == own_cand.get());
      };
      std::erase_if(numeric_, mine);
      std::erase_if(falsify_, mine);
    };
    struct ForgetAtExit {
      std::function<void()> f;
      ~ForgetAtExit() { f(); }
    } forget{forget_evaluators};
    ir::Context* ctx = &ctx_;
    Lowering *ref = &ref_, *cand = &cand_;
    auto deadline = budget_end();
    // A context and lowerings of this worker's own (the caller's context is the order's): false when
    // Execute, re-run for them, ran out of the budget.
    auto own_lowerings = [&]() -> bool {
      forget_evaluators();
      own_ref.reset(), own_cand.reset(), own_ctx.reset();
      own_ctx = std::make_unique<ir::Context>();
      own_ref = std::make_unique<Lowering>(*own_ctx, b_, m_, true, opt_.exec);
      own_cand = std::make_unique<Lowering>(*own_ctx, b_, m_, false, opt_.exec);
      try {
        own_ref->execute_all();
        own_cand->execute_all();
      } catch (const Unsupported&) {  // the caller's lowering ran: only the budget can stop this one
        bool out_of_time = false;
        for (const auto* low : {own_ref.get(), own_cand.get()})
          for (const auto& L : low->launches()) out_of_time = out_of_time || (L.result && L.result->out_of_time);
        if (!out_of_time) throw;
        return false;
      }
      ctx = own_ctx.get(), ref = own_ref.get(), cand = own_cand.get();
      ref->set_deadline(deadline);
      cand->set_deadline(deadline);
      return true;
    };
    if (jobs_ > 1) {
      if (!own_lowerings()) throw StopWorker{};  // this worker takes no location
    } else {
      ref->set_deadline(deadline);
      cand->set_deadline(deadline);
    }
    smt::Solver& solver = smt::thread_solver();
    uint64_t calls0 = solver.stats().solver_calls;
    while (auto job = take()) {
      Slot slot = evaluate(*ctx, *ref, *cand, solver, job->second, job->first);
      // (a numeric difference at an output proven equal at its symbolic location is not a BUG: check.cpp)
      bool ends = slot.kind != Slot::Kind::Done ||
                  (slot.lr.verdict == smt::Verdict::Differ && slot.lr.confirmed_f32 &&
                   !(slot.lr.sampled && !settled_.empty() && settled_[slot.lr.loc.output]));
      {
        std::lock_guard lock(mu_);
        slots_[job->first] = std::move(slot);
        ++finished_;
        if (ends) stop_ = true;  // nothing after it is handed out; earlier ones still finish
      }
      // Locations share little beyond the launch records: the nodes and element memos one location
      // built are rarely another's, so past a size the worker starts over in a fresh context instead of
      // growing with every location. The caller's context keeps what it holds; it is the order's.
      if (!ends && ctx->bytes_used() > opt_.worker_context_bytes && !own_lowerings()) break;
    }
    std::lock_guard lock(mu_);
    solver_calls_ += solver.stats().solver_calls - calls0;
  } catch (const StopWorker&) {
  } catch (...) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::current_exception();
    stop_ = true;
  }
  std::lock_guard lock(mu_);
  --active_;
  done_cv_.notify_all();
}

// Progress on stderr for runs longer than a second: rate, and an ETA where the end is known.
void Search::progress_line() {
  double elapsed = since(t0_);
  if (elapsed < 1.0) return;
  double rate = finished_ / std::max(elapsed, 1e-9);
  int64_t total = opt_.full ? report_.total_locations
                            : (opt_.max_locations ? int64_t(std::min<size_t>(opt_.max_locations, report_.total_locations))
                                                  : report_.total_locations);
  double eta = rate > 0 ? double(total - int64_t(finished_)) / rate : 0;
  double left = opt_.budget_s - elapsed;
  std::string tail = eta <= left ? fmt::format("ETA {:.0f} s", eta)
                                 : fmt::format("budget ends in {:.0f} s (all would take {:.0f} s more)", left, eta);
  std::fprintf(stderr, "\r\033[Kdirigo check: %zu/%lld locations, %.1f/s, %s%s", finished_, (long long)total, rate,
               tail.c_str(), dedup_hits_ ? fmt::format(", {} deduplicated", dedup_hits_.load()).c_str() : "");
  printed_ = true;
}

Clock::time_point Search::budget_end() const {
  return t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.budget_s));
}

smt::DecideOptions Search::within_budget(smt::DecideOptions o) const {
  if (opt_.budget_s <= 0) return o;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(budget_end() - Clock::now()).count();
  o.timeout_ms = std::min<unsigned>(o.timeout_ms, unsigned(std::max<int64_t>(1, left)));
  return o;
}

}  // namespace dirigo::check::detail
