// tenon timeline: one self-contained HTML page (inline CSS and JS, no network) drawing node
// counts by NodePool and capacity type, pending pods and cost per hour over the log, with every
// decision as a marker whose reason shows on hover; zoomable to a window.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "log/codec.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

// Samples per page at most: enough for a smooth line, small enough for a quick page.
constexpr std::int64_t kSamplesMax = 2000;
constexpr std::int64_t kSampleEveryMinNs = 10 * kSecond.value;

using Sample = ClusterSample;

// Folds the whole log, sampling the state each time the clock crosses a sample boundary.
std::vector<Sample> Samples(const log::EventLog& log, Instant first, Instant last) {
  const std::int64_t span = std::max<std::int64_t>(last.value - first.value, 1);
  const std::int64_t every = std::max(kSampleEveryMinNs, span / kSamplesMax + 1);
  std::vector<Sample> samples;
  State state;
  Instant next = first;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    // The state before this tick is the state at every boundary the tick passes.
    if (const auto* tick = std::get_if<Tick>(event); tick != nullptr && tick->now >= next) {
      if (state.now.value != 0) samples.push_back(SampleCluster(state));
      while (next <= tick->now) next += Duration{every};
    }
    Step(state, Seq{record.seq}, *event);
    return true;
  });
  samples.push_back(SampleCluster(state));
  return samples;
}

std::string MarkerText(const Decision& d) {
  return std::visit(
      [&](const auto& body) -> std::string {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ProvisioningDecision>) {
          std::string text = "provisioning: " + std::to_string(body.pods.size()) + " pods";
          for (const auto& c : body.new_claims) {
            text += "; new " + c.nodeclaim + " (" + c.nodepool + ", " +
                    std::to_string(c.pods.size()) + " pods" +
                    (c.offerings.empty() ? ""
                                         : ", first choice " + c.offerings[0].instance_type + " " +
                                               DollarsText(c.offerings[0].price) + "/h") +
                    ")";
          }
          return text;
        } else if constexpr (std::is_same_v<T, LifecycleDecision>) {
          return body.nodeclaim + " " + Name(body.transition) + ": " + body.reason;
        } else {
          std::string text =
              std::string(Name(body.method)) + " " + Name(body.phase) + ": " + body.reason;
          for (const auto& c : body.nodeclaims) text += " [" + c + "]";
          return text;
        }
      },
      d.body);
}

// The NodePool a decision is about, when it names one (a lifecycle step's, from the claims the
// provisioning and disruption decisions before it named), and a short label for the decisions
// that change capacity: launches, removals, interruptions. Empty for the others.
struct MarkerFacts {
  std::string pool;
  std::string label;
};

class Labeller {
 public:
  MarkerFacts Of(const Decision& d) {
    MarkerFacts f;
    if (const auto* p = std::get_if<ProvisioningDecision>(&d.body)) {
      for (const auto& c : p->new_claims) {
        pools_[c.nodeclaim] = c.nodepool;
        if (f.pool.empty()) f.pool = c.nodepool;
      }
      if (!p->new_claims.empty()) {
        f.label = "+" + std::to_string(p->new_claims.size()) + " " + f.pool + " for " +
                  std::to_string(p->pods.size()) + " pods";
      }
    } else if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) {
      for (const auto& c : x->candidates) pools_[c.nodeclaim] = c.nodepool;
      if (!x->nodeclaims.empty()) f.pool = PoolOf(x->nodeclaims.front());
      if (x->phase == DisruptionPhase::kExecuted || x->phase == DisruptionPhase::kReplacing) {
        f.label = std::string(Name(x->method)) + " " + Name(x->phase);
        for (const auto& c : x->nodeclaims) f.label += " " + c;
      }
    } else if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) {
      f.pool = PoolOf(l->nodeclaim);
      if (l->transition == Transition::kInterrupted || l->transition == Transition::kLaunchFailed) {
        f.label = l->nodeclaim + " " + Name(l->transition);
      }
    }
    return f;
  }

 private:
  std::string PoolOf(const std::string& claim) const {
    auto it = pools_.find(claim);
    return it == pools_.end() ? "" : it->second;
  }
  std::map<std::string, std::string> pools_;  // NodeClaim -> NodePool, as decisions named them.
};

nlohmann::json Data(const log::EventLog& log) {
  std::vector<Decision> decisions;
  log.ScanDecisions(1, [&](const log::DecisionRecord& r) {
    decisions.push_back(log::DecodeDecision(r.payload));
    return true;
  });
  Instant first, last;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* e = std::get_if<Event>(&entry)) {
      if (const auto* tick = std::get_if<Tick>(e)) {
        if (first.value == 0) first = tick->now;
        last = std::max(last, tick->now);
      }
    }
    return true;
  });
  auto samples = Samples(log, first, last);
  std::map<std::string, int> series_index;
  for (const auto& s : samples) {
    for (const auto& [key, n] : s.nodes) series_index.emplace(key, 0);
  }
  nlohmann::json series = nlohmann::json::array();
  for (auto& [key, index] : series_index) {
    index = static_cast<int>(series.size());
    series.push_back(key);
  }
  const auto seconds = [&](Instant t) { return static_cast<double>(t.value - first.value) / 1e9; };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : samples) {
    std::vector<int> nodes(series_index.size(), 0);
    for (const auto& [key, n] : s.nodes) nodes[series_index[key]] = n;
    rows.push_back({seconds(s.at), s.pending, static_cast<double>(s.cost.value) / 1e6, nodes});
  }
  nlohmann::json markers = nlohmann::json::array();
  std::map<std::string, int> pools;  // Lanes: one per NodePool, in name order.
  Labeller labeller;
  std::vector<MarkerFacts> facts;
  for (const auto& d : decisions) facts.push_back(labeller.Of(d));
  for (const auto& f : facts) {
    if (!f.pool.empty()) pools.emplace(f.pool, 0);
  }
  nlohmann::json lanes = nlohmann::json::array();
  for (auto& [pool, lane] : pools) {
    lane = static_cast<int>(lanes.size());
    lanes.push_back(pool);
  }
  lanes.push_back("other");
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const Decision& d = decisions[i];
    const int lane = facts[i].pool.empty() ? static_cast<int>(pools.size()) : pools[facts[i].pool];
    markers.push_back(
        {seconds(d.at), log::DecisionKind(d), MarkerText(d), d.cause.value, lane, facts[i].label});
  }
  return {{"start", Rfc3339Text(first)},
          {"start_ns", first.value},
          {"end_s", seconds(last)},
          {"series", series},
          {"samples", rows},
          {"lanes", lanes},
          {"markers", markers}};
}

// The page: data inline, drawn by the script into SVG; wheel zooms, drag pans, the URL hash
// (#from=S&to=S, seconds from the start) sets the window, Reset shows everything.
constexpr const char* kPageHead = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tenon timeline</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:16px;margin:0 0 4px}
#bar{margin:6px 0}
svg{display:block;border:1px solid #ddd;background:#fcfcfc;cursor:grab}
.axis{stroke:#999;stroke-width:1}
.label{fill:#555;font-size:11px}
.marker{stroke:#fff;stroke-width:1;cursor:pointer}
.provisioning{fill:#2a7ae2;background:#2a7ae2}.lifecycle{fill:#999;background:#999}
.disruption{fill:#d9480f;background:#d9480f}
#legend span{display:inline-block;margin-right:12px}
#legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 6px;border-radius:3px;max-width:520px;display:none;font-size:12px}
#main{display:flex;gap:12px;align-items:flex-start}
#side{width:330px;max-height:640px;overflow:auto;border:1px solid #ddd;padding:4px 8px;font-size:12px}
#side h2,#why h2{font-size:13px;margin:4px 0}
#decisions{padding-left:18px;margin:0}#decisions li{margin:2px 0;cursor:pointer}
#decisions li.current{background:#fff3bf}
.decision-label{fill:#333;font-size:10px}
.lane{fill:#777;font-size:10px}
#why{border:1px solid #ddd;padding:4px 8px;margin:8px 0;font-size:12px;display:none}
</style></head><body>
<h1>tenon timeline</h1>
<div id="bar">window <span id="window"></span> <button id="reset">Reset zoom</button>
 (wheel to zoom, drag to pan; a decision in the list, or #t=HH:MM in the address, shows the
 ten minutes around it) <span id="summary"></span></div>
<div id="legend"></div>
<div id="why"></div>
<div id="main"><svg id="chart" width="1100" height="560"></svg>
<div id="side"><h2>What changed capacity</h2><ol id="decisions"></ol></div></div>
<div id="tip"></div>
<script id="data" type="application/json">)";

constexpr const char* kPageTail = R"(</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const svg = document.getElementById("chart");
const W = 1100, L = 60, R = 20, plotW = W - L - R;
const panels = [{name: "nodes", top: 20, h: 180}, {name: "pending pods", top: 230, h: 110},
                {name: "cost $/h", top: 370, h: 110}];
const markerY = 510, laneH = 12;
svg.setAttribute("height", markerY + data.lanes.length * laneH + 40);
const colors = ["#2a7ae2", "#e8590c", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285", "#5f3dc4", "#e67700"];
let view = {from: 0, to: Math.max(data.end_s, 1)};
function parseHash() {
  const m = /from=([0-9.]+)&to=([0-9.]+)/.exec(location.hash);
  if (m && +m[2] > +m[1]) view = {from: +m[1], to: +m[2]};
}
function clock(s) {
  const t = new Date(data.start_ns / 1e6 + s * 1000);
  return t.toISOString().substr(11, 8);
}
function el(name, attrs, parent) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  (parent || svg).appendChild(e);
  return e;
}
function x(s) { return L + (s - view.from) / (view.to - view.from) * plotW; }
function line(panel, values, max, color, cls) {
  let d = "";
  const rows = data.samples;
  for (let i = 0; i < rows.length; i++) {
    const s = rows[i][0];
    if (s < view.from && (i + 1 >= rows.length || rows[i + 1][0] < view.from)) continue;
    if (i > 0 && rows[i - 1][0] > view.to) break;
    const y = panel.top + panel.h - values(rows[i]) / max * panel.h;
    d += (d ? "L" : "M") + x(Math.max(s, view.from)).toFixed(1) + "," + y.toFixed(1);
  }
  if (d) el("path", {d: d, fill: "none", stroke: color, "stroke-width": 2, class: cls});
}
function draw() {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const rows = data.samples;
  const maxOf = f => Math.max(1, ...rows.map(f));
  const nodeMax = maxOf(r => Math.max(0, ...r[3]));
  const maxes = [nodeMax, maxOf(r => r[1]), maxOf(r => r[2])];
  panels.forEach((p, i) => {
    el("line", {x1: L, x2: W - R, y1: p.top + p.h, y2: p.top + p.h, class: "axis"});
    el("text", {x: 4, y: p.top + 10, class: "label"}).textContent = p.name;
    el("text", {x: 4, y: p.top + 24, class: "label"}).textContent =
        "max " + (i == 2 ? maxes[i].toFixed(4) : maxes[i]);
  });
  data.series.forEach((name, k) => line(panels[0], r => r[3][k], nodeMax, colors[k % colors.length], "series"));
  line(panels[1], r => r[1], maxes[1], "#c92a2a", "pending");
  line(panels[2], r => r[2], maxes[2], "#2b8a3e", "cost");
  for (let i = 0; i <= 6; i++) {
    const s = view.from + (view.to - view.from) * i / 6;
    const anchor = i == 0 ? "start" : i == 6 ? "end" : "middle";
    el("text", {x: x(s), y: markerY + data.lanes.length * laneH + 30, class: "label",
                "text-anchor": anchor}).textContent = clock(s);
  }
  data.lanes.forEach((name, k) => {
    el("text", {x: 4, y: markerY + k * laneH + 4, class: "lane"}).textContent = name;
  });
  let shown = 0, labelled = 0;
  data.markers.forEach((m, i) => {
    if (m[0] < view.from || m[0] > view.to) return;
    const cx = x(m[0]).toFixed(1);
    const c = el("circle", {cx: cx, cy: markerY + m[4] * laneH, r: 4,
                            class: "marker " + m[1], "data-seq": m[3]});
    el("title", {}, c).textContent = clock(m[0]) + " (seq " + m[3] + ") " + m[2];
    c.addEventListener("mousemove", ev => tip(ev, clock(m[0]) + " (seq " + m[3] + ") " + m[2]));
    c.addEventListener("mouseleave", () => tip(null));
    shown++;
    if (!m[5]) return;
    // A decision that changed capacity: a line up through the panels and its label.
    c.setAttribute("data-item", "d-" + i);
    c.addEventListener("click", () => select(i, true));
    el("line", {x1: cx, x2: cx, y1: panels[0].top, y2: markerY, stroke: "#ccc",
                "stroke-dasharray": "2,3"});
    const label = el("text", {x: +cx + 3, y: panels[0].top + 10 + (labelled % 6) * 12,
                              class: "decision-label", "data-item": "d-" + i});
    label.textContent = clock(m[0]) + " " + m[5];
    labelled++;
  });
  document.getElementById("window").textContent = clock(view.from) + " - " + clock(view.to);
  document.getElementById("summary").textContent = shown + " of " + data.markers.length + " decisions shown";
  document.body.setAttribute("data-markers-shown", shown);
  document.body.setAttribute("data-labels-shown", labelled);
  document.body.setAttribute("data-lanes", data.lanes.length);
  document.body.setAttribute("data-series", data.series.length);
  document.body.setAttribute("data-rendered", "1");
}
function tip(ev, text) {
  const t = document.getElementById("tip");
  if (!ev) { t.style.display = "none"; return; }
  t.textContent = text; t.style.display = "block";
  t.style.left = (ev.clientX + 12) + "px"; t.style.top = (ev.clientY + 12) + "px";
}
svg.addEventListener("wheel", ev => {
  ev.preventDefault();
  const at = view.from + (ev.offsetX - L) / plotW * (view.to - view.from);
  const k = ev.deltaY > 0 ? 1.25 : 0.8;
  view = {from: Math.max(0, at - (at - view.from) * k), to: Math.min(data.end_s, at + (view.to - at) * k)};
  if (view.to - view.from < 1) view.to = view.from + 1;
  draw();
});
let drag = null;
svg.addEventListener("mousedown", ev => { drag = {x: ev.clientX, view: {...view}}; });
window.addEventListener("mouseup", () => { drag = null; });
window.addEventListener("mousemove", ev => {
  if (!drag) return;
  const ds = (drag.x - ev.clientX) / plotW * (drag.view.to - drag.view.from);
  view = {from: drag.view.from + ds, to: drag.view.to + ds};
  draw();
});
document.getElementById("reset").addEventListener("click", () => { view = {from: 0, to: Math.max(data.end_s, 1)}; draw(); });
const legend = document.getElementById("legend");
data.series.forEach((name, k) => {
  const s = document.createElement("span");
  s.innerHTML = '<i style="background:' + colors[k % colors.length] + '"></i>';
  s.appendChild(document.createTextNode("nodes " + name));
  legend.appendChild(s);
});
legend.insertAdjacentHTML("beforeend", '<span><i style="background:#c92a2a"></i>pending pods</span>' +
  '<span><i style="background:#2b8a3e"></i>cost $/h</span><span><i class="provisioning"></i>provisioning</span>' +
  '<span><i class="lifecycle"></i>lifecycle</span><span><i class="disruption"></i>disruption</span>');
// The list of decisions that changed capacity, each linked to its point on the chart.
const list = document.getElementById("decisions");
let items = 0;
data.markers.forEach((m, i) => {
  if (!m[5]) return;
  const li = document.createElement("li");
  li.id = "d-" + i;
  li.setAttribute("data-seq", m[3]);
  li.textContent = clock(m[0]) + " " + m[5];
  li.title = m[2];
  li.addEventListener("click", () => { location.hash = "t=" + clock(m[0]); });
  list.appendChild(li);
  items++;
});
document.body.setAttribute("data-decisions-listed", items);
function select(i, scroll) {
  for (const li of list.querySelectorAll("li.current")) li.classList.remove("current");
  const li = document.getElementById("d-" + i);
  if (!li) return;
  li.classList.add("current");
  if (scroll) li.scrollIntoView({block: "nearest"});
}
// #t=HH:MM[:SS]: the ten minutes around that moment, and what changed capacity in them.
function sampleAt(s) {
  let best = data.samples[0];
  for (const r of data.samples) { if (r[0] <= s) best = r; }
  return best;
}
function showWhy() {
  const m = /t=([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?/.exec(location.hash);
  const why = document.getElementById("why");
  if (!m) { why.style.display = "none"; return false; }
  const day = data.start_ns / 1e9 - (data.start_ns / 1e9) % 86400;
  const at = day + (+m[1]) * 3600 + (+m[2]) * 60 + (+(m[3] || 0)) - data.start_ns / 1e9;
  view = {from: Math.max(0, at - 300), to: Math.min(Math.max(data.end_s, 1), at + 300)};
  const a = sampleAt(view.from), b = sampleAt(view.to);
  const nodes = r => r[3].reduce((x, y) => x + y, 0);
  why.innerHTML = "";
  const h = document.createElement("h2");
  h.textContent = "Around " + clock(at) + ": " + nodes(a) + " to " + nodes(b) + " nodes, $" +
      a[2].toFixed(4) + "/h to $" + b[2].toFixed(4) + "/h, " + a[1] + " to " + b[1] + " pending pods";
  why.appendChild(h);
  const ul = document.createElement("ul");
  let n = 0, first = -1;
  data.markers.forEach((mk, i) => {
    if (!mk[5] || mk[0] < view.from || mk[0] > view.to) return;
    const li = document.createElement("li");
    li.textContent = clock(mk[0]) + " (seq " + mk[3] + ") " + mk[2];
    ul.appendChild(li);
    if (first < 0) first = i;
    n++;
  });
  if (n == 0) ul.textContent = "nothing launched or went in these ten minutes";
  why.appendChild(ul);
  why.style.display = "block";
  document.body.setAttribute("data-why-decisions", n);
  if (first >= 0) select(first, true);
  return true;
}
function route() { if (!showWhy()) parseHash(); draw(); }
window.addEventListener("hashchange", route);
route();
</script></body></html>
)";

}  // namespace

TimelineReport WriteTimeline(const log::EventLog& log, std::ostream& out) {
  nlohmann::json data = Data(log);
  std::string json = data.dump();
  // The data sits inside a <script> element: "</" must not close it.
  for (std::size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 2)) {
    json.replace(at, 2, "<\\/");
  }
  out << kPageHead << json << kPageTail;
  return TimelineReport{data["samples"].size(), data["markers"].size(), data["series"].size()};
}

}  // namespace tenon::replay
