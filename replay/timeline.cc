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

struct Sample {
  Instant at;
  std::map<std::string, int> nodes;  // "nodepool/capacity type" -> launched NodeClaims.
  int pending = 0;
  MicroUsdPerHour cost{0};
};

Sample SampleOf(const State& state) {
  Sample s;
  s.at = state.now;
  for (const auto& [name, claim] : state.nodeclaims) {
    if (claim.launched.value == 0) continue;
    s.nodes[claim.nodepool + "/" + claim.capacity_type]++;
    s.cost += claim.price;
  }
  for (const auto& [key, pod] : state.pods) {
    bool done = pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed;
    if (pod.node_name.empty() && !done) ++s.pending;
  }
  return s;
}

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
      if (state.now.value != 0) samples.push_back(SampleOf(state));
      while (next <= tick->now) next += Duration{every};
    }
    Step(state, Seq{record.seq}, *event);
    return true;
  });
  samples.push_back(SampleOf(state));
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
  for (const auto& d : decisions) {
    markers.push_back({seconds(d.at), log::DecisionKind(d), MarkerText(d), d.cause.value});
  }
  return {{"start", Rfc3339Text(first)},
          {"start_ns", first.value},
          {"end_s", seconds(last)},
          {"series", series},
          {"samples", rows},
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
</style></head><body>
<h1>tenon timeline</h1>
<div id="bar">window <span id="window"></span> <button id="reset">Reset zoom</button>
 (wheel to zoom, drag to pan) <span id="summary"></span></div>
<div id="legend"></div>
<svg id="chart" width="1100" height="560"></svg>
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
const markerY = 510;
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
    el("text", {x: x(s), y: 550, class: "label", "text-anchor": anchor}).textContent = clock(s);
  }
  let shown = 0;
  const lanes = {provisioning: 0, lifecycle: 1, disruption: 2};
  for (const m of data.markers) {
    if (m[0] < view.from || m[0] > view.to) continue;
    const c = el("circle", {cx: x(m[0]).toFixed(1), cy: markerY + lanes[m[1]] * 10, r: 4,
                            class: "marker " + m[1], "data-seq": m[3]});
    el("title", {}, c).textContent = clock(m[0]) + " (seq " + m[3] + ") " + m[2];
    c.addEventListener("mousemove", ev => tip(ev, clock(m[0]) + " (seq " + m[3] + ") " + m[2]));
    c.addEventListener("mouseleave", () => tip(null));
    shown++;
  }
  document.getElementById("window").textContent = clock(view.from) + " - " + clock(view.to);
  document.getElementById("summary").textContent = shown + " of " + data.markers.length + " decisions shown";
  document.body.setAttribute("data-markers-shown", shown);
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
parseHash();
window.addEventListener("hashchange", () => { parseHash(); draw(); });
draw();
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
