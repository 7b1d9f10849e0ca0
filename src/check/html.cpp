// The one-page HTML report (check/present.h): the verdict, a picture of each output tensor's
// locations, the two values with their differing tokens marked, the witness by input, per-stage
// times. Self-contained: inline CSS and a few lines of JavaScript that draw the picture on a canvas
// from a string of one letter per cell.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "check/present.h"

namespace dirigo::check {

namespace {

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string idx(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s;
}

// Cell letters: n not reached, e equal, d differs, u undecided; a cell covering several locations
// shows the most telling of them (d > u > e > n).
int rank(char c) { return c == 'd' ? 3 : c == 'u' ? 2 : c == 'e' ? 1 : 0; }

struct Picture {
  int64_t cols = 1, rows = 1, per_cell = 1;  // per_cell locations (consecutive flat indices) per cell
  std::string cells;
  int64_t marked = -1;                       // the cell of the first differing location
  size_t equal = 0, differ = 0, undecided = 0;
};

Picture picture(const Report& r, size_t output) {
  const OutputInfo& o = r.outputs[output];
  Picture p;
  int64_t n = std::max<int64_t>(o.numel, 1);
  constexpr int64_t kMaxCells = 256 * 256;
  p.per_cell = (n + kMaxCells - 1) / kMaxCells;
  int64_t ncells = (n + p.per_cell - 1) / p.per_cell;
  // Rows of the last dimension when that reads well, else a square.
  int64_t last = o.shape.empty() ? 1 : o.shape.back();
  if (p.per_cell == 1 && last >= 4 && last <= 512) p.cols = last;
  else p.cols = std::max<int64_t>(1, int64_t(std::ceil(std::sqrt(double(ncells)))));
  p.rows = (ncells + p.cols - 1) / p.cols;
  p.cells.assign(size_t(p.rows * p.cols), 'n');
  // an output proven equal at its symbolic location: every location is, but those listed otherwise
  if (o.symbolic) {
    std::fill(p.cells.begin(), p.cells.begin() + ncells, 'e');
    p.equal = size_t(n);
  }
  for (size_t k = 0; k < r.locations.size(); ++k) {
    const LocationResult& l = r.locations[k];
    if (l.loc.output != output) continue;
    char c = l.verdict == smt::Verdict::Equal ? 'e' : l.verdict == smt::Verdict::Differ ? 'd' : 'u';
    if (o.symbolic && c != 'e') --p.equal;
    if (!o.symbolic || c != 'e') (c == 'e' ? p.equal : c == 'd' ? p.differ : p.undecided) += 1;
    int64_t cell = l.loc.flat / p.per_cell;
    if (cell < 0 || cell >= int64_t(p.cells.size())) continue;
    if (rank(c) > rank(p.cells[cell])) p.cells[cell] = c;
    if (r.first_differ && *r.first_differ == k) p.marked = cell;
  }
  return p;
}

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px;margin:0 0 4px} .reason{margin:0 0 16px;color:#444}
.BUG{color:#b3001b} .SUSPECT{color:#a35f00} .CHECKED,.VERIFIED{color:#1c7c32} .TIMEOUT,.UNSUPPORTED{color:#555}
h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #ddd}
code,.expr{font:13px/1.5 ui-monospace,monospace} .expr{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px 8px;margin:4px 0}
mark{background:#ffd54d;padding:0 1px}
table{border-collapse:collapse} td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
.legend span{display:inline-block;width:11px;height:11px;margin:0 4px 0 12px;vertical-align:-1px;opacity:.75}
.bar{display:inline-block;height:12px;background:#4a7bd0;vertical-align:-1px}
canvas{border:1px solid #bbb;image-rendering:pixelated;margin-top:6px}
)";

}  // namespace

std::string to_html(const Report& r) {
  std::string outcome(outcome_name(r.outcome));
  std::string h = fmt::format("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dirigo: {}</title><style>{}"
                              "</style></head><body>\n",
                              outcome, kStyle);
  std::string head = outcome;
  if (r.outcome == Outcome::Checked) head += fmt::format(": {} of {} locations proven equal for every input", r.equal, r.total_locations);
  if (r.outcome == Outcome::Verified)
    head += fmt::format("{}: all {} locations proven equal{}", proof_kind(r) == "exact" ? "" : " " + proof_kind(r),
                        r.total_locations, proof_kind(r) == "exact" ? " for every input" : "");
  h += fmt::format("<h1 class=\"{}\">{}</h1>\n", outcome, esc(head));
  if (!r.reason.empty()) h += fmt::format("<p class=\"reason\">{}</p>\n", esc(r.reason));
  if (!r.evidence.empty()) h += fmt::format("<p>evidence: <b>{}</b></p>\n", esc(r.evidence));

  // The picture, one canvas per output.
  h += "<h2>Output locations</h2>\n<div class=\"legend\">"
       "<span style=\"background:#2e9e44\"></span>proven equal for every input"
       "<span style=\"background:#d7263d\"></span>differs"
       "<span style=\"background:#f2a900\"></span>undecided"
       "<span style=\"background:#d9d9d9\"></span>not reached</div>\n";
  std::string script = "const COLORS={n:'#d9d9d9',e:'#2e9e44',d:'#d7263d',u:'#f2a900'};\n"
                       "function draw(id,cols,rows,px,cells,marked){const c=document.getElementById(id);"
                       "c.width=cols*px;c.height=rows*px;const g=c.getContext('2d');"
                       "for(let i=0;i<cells.length;i++){g.fillStyle=COLORS[cells[i]];"
                       "g.fillRect((i%cols)*px,Math.floor(i/cols)*px,px,px);}"
                       "if(marked>=0){g.strokeStyle='#000';g.lineWidth=Math.max(1,px/4);"
                       "g.strokeRect((marked%cols)*px,Math.floor(marked/cols)*px,px,px);}}\n";
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    const OutputInfo& out = r.outputs[o];
    Picture p = picture(r, o);
    int64_t px = std::clamp<int64_t>(960 / std::max<int64_t>(p.cols, 1), 1, 24);
    if (p.rows * px > 720) px = std::max<int64_t>(1, 720 / std::max<int64_t>(p.rows, 1));
    std::string shape;
    for (size_t k = 0; k < out.shape.size(); ++k) shape += (k ? "×" : "") + std::to_string(out.shape[k]);
    h += fmt::format("<p><code>{}</code> (candidate <code>{}</code>), shape {}: {} location(s); {} proven equal, {} "
                     "differ, {} undecided{}{}{}</p>\n",
                     esc(out.ref_name), esc(out.cand_name), shape.empty() ? "scalar" : shape, out.numel, p.equal, p.differ,
                     p.undecided, p.per_cell > 1 ? fmt::format("; one cell per {} consecutive locations", p.per_cell) : "",
                     p.cols != (out.shape.empty() ? 1 : out.shape.back()) || p.per_cell > 1
                         ? "; cells in row-major order" : "; one row per last-dimension line",
                     r.locations_omitted ? fmt::format("; {} more location(s), equal or undecided, were checked but not listed (shown "
                                                       "as not reached)", r.locations_omitted)
                                         : "");
    h += fmt::format("<canvas id=\"out{}\" title=\"{}\"></canvas>\n", o, esc(out.ref_name));
    script += fmt::format("draw('out{}',{},{},{},'{}',{});\n", o, p.cols, p.rows, px, p.cells, p.marked);
  }

  // The differing location.
  if (r.first_differ) {
    const LocationResult& l = r.locations[*r.first_differ];
    h += fmt::format("<h2>Where they differ: <code>{}[{}]</code></h2>\n", esc(r.outputs[l.loc.output].ref_name), idx(l.loc.index));
    if (!l.ref_part.empty()) {
      auto [ref, cand] = mark_differences(l.ref_part, l.cand_part, "<mark>", "</mark>", esc);
      if (!l.shared_expr.empty())
        h += fmt::format("<p>both values are</p><div class=\"expr\">{}</div><p>where □ is, in the reference</p>"
                         "<div class=\"expr\">{}</div><p>and in the candidate</p><div class=\"expr\">{}</div>\n",
                         esc(l.shared_expr), ref, cand);
      else
        h += fmt::format("<p>reference</p><div class=\"expr\">{}</div><p>candidate</p><div class=\"expr\">{}</div>\n", ref, cand);
      if (!l.parts_note.empty()) h += fmt::format("<p>They differ in: {}</p>\n", esc(l.parts_note));
    } else if (!l.ref_expr.empty()) {
      h += fmt::format("<p>reference</p><div class=\"expr\">{}</div><p>candidate</p><div class=\"expr\">{}</div>\n",
                       esc(l.ref_expr), esc(l.cand_expr));
    }
    h += fmt::format("<p>At the witness: reference <b>{}</b> vs candidate <b>{}</b> (fp32; fp64: {} vs {})</p>\n",
                     l.ref_value_f32, l.cand_value_f32, l.ref_value, l.cand_value);
    if (!l.leaves.empty()) {
      std::map<std::string, std::vector<const WitnessLeaf*>> by;
      std::vector<std::string> order;
      for (const auto& w : l.leaves) {
        if (!by.count(w.input)) order.push_back(w.input);
        by[w.input].push_back(&w);
      }
      std::string others = "every other element 0";
      for (const WitnessLeaf& f : l.fills) others += fmt::format(", of {} {:.6g}", esc(f.input), f.value);
      h += fmt::format("<h2>Witness: {} input element(s) matter ({})</h2>\n<table><tr><th>input</th>"
                       "<th>role</th><th>elements</th><th>largest values</th></tr>\n",
                       l.leaves.size(), others);
      for (const auto& name : order) {
        auto v = by[name];
        std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return std::fabs(a->value) > std::fabs(b->value); });
        std::string vals;
        for (size_t k = 0; k < v.size() && k < 4; ++k) vals += fmt::format("{}[{}] = {:.6g}<br>", esc(name), idx(v[k]->index), v[k]->value);
        h += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>\n", esc(name),
                         esc(v[0]->kind == "trimmed" ? "result of " + v[0]->aten + " (shared prefix)" : v[0]->kind), v.size(), vals);
      }
      h += "</table>\n";
    } else if (!l.witness.empty()) {
      h += "<h2>Witness (largest values)</h2>\n<table>";
      for (const auto& w : l.witness) h += fmt::format("<tr><td><code>{}</code></td><td>{:.6g}</td></tr>", esc(w.name), w.value);
      h += "</table>\n";
    }
  }
  for (const auto& f : r.findings)
    h += fmt::format("<p><b>{}</b> in kernel <code>{}</code> at PTX line {}: {}</p>\n", esc(f.kind), esc(f.kernel),
                     f.where.ptx_line, esc(f.message));

  // Per-stage times.
  h += "<h2>Time by stage</h2>\n<table>\n";
  double longest = 1e-9;
  for (const auto& [name, s] : r.stage_seconds) longest = std::max(longest, s);
  for (const auto& [name, s] : r.stage_seconds)
    h += fmt::format("<tr><td>{}</td><td>{:.3f} s</td><td><span class=\"bar\" style=\"width:{}px\"></span></td></tr>\n",
                     esc(name), s, int(std::round(400 * s / longest)));
  h += fmt::format("<tr><td>check (all of it)</td><td>{:.3f} s</td><td></td></tr>\n</table>\n", r.seconds);
  h += fmt::format("<p>{} kernel launch(es) executed, {} prefix op(s) trimmed, {} location(s) checked, {} solver call(s)</p>\n",
                   r.kernels, r.prefix_trimmed, r.checked, r.solver_calls);
  if (!r.notes.empty()) {
    h += "<h2>Notes</h2><ul>\n";
    for (const auto& n : r.notes) h += "<li>" + esc(n) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<script>\n" + script + "</script>\n</body></html>\n";
  return h;
}

}  // namespace dirigo::check
