// A one-line progress display on stderr (only on a terminal), for loading and scoring big matrices.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include <unistd.h>

namespace dirigo::score {

class ProgressLine {
 public:
  ProgressLine(std::string label, bool on) : label_(std::move(label)), on_(on && isatty(2)) {}
  void operator()(long long done, long long total) {
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    std::fprintf(stderr, "\r%s %lld/%lld", label_.c_str(), done, total);
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  // This line as the (done, total) progress callback that score() and synthesize() take.
  std::function<void(size_t, size_t)> callback() {
    return [this](size_t done, size_t total) { (*this)(static_cast<long long>(done), static_cast<long long>(total)); };
  }

 private:
  std::string label_;
  bool on_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace dirigo::score
