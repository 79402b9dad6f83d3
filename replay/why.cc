// tenon why: the window around a moment is folded once, from the newest snapshot before it.
// Each decision the fold makes there becomes a change (a provisioning batch that launched, a
// disruption carried out, an interruption, a NodeClaim lost another way); the commands the same
// fold step issued tie launches to the decision that asked for them, and the events after tie in
// what came of them (the fleet's answers, where evicted pods were bound next).
#include "replay/why.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "log/codec.h"
#include "model/timestamp.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

WhyCounts CountsOf(const State& state) {
  const ClusterSample sample = SampleCluster(state);
  WhyCounts c;
  c.at = sample.at;
  for (const auto& [series, n] : sample.nodes) c.nodes += n;
  c.cost = sample.cost;
  c.pending = sample.pending;
  return c;
}

// "web" for "default/web-7": the name a Deployment's or a Job's pods share.
std::string WorkloadOf(const std::string& pod) {
  std::string name = pod.substr(pod.find('/') + 1);
  const auto dash = name.rfind('-');
  return dash == std::string::npos || dash == 0 ? name : name.substr(0, dash);
}

std::string LimitsText(const NodePoolLimits& limits) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (limits.cpu) {
    const std::int64_t m = limits.cpu->value;
    add("cpu " + (m % 1000 == 0 ? std::to_string(m / 1000) : std::to_string(m) + "m"));
  }
  if (limits.memory) {
    add("memory " + std::to_string(limits.memory->value / (1024 * kMebibyte.value)) + "Gi");
  }
  if (limits.nodes) add("nodes " + std::to_string(*limits.nodes));
  for (const auto& [name, n] : limits.extended) add(name + " " + std::to_string(n));
  return out;
}

std::vector<WhyPool> PoolsOf(const State& state) {
  std::vector<WhyPool> pools;
  for (const auto& [name, pool] : state.cluster.nodepools) {
    pools.push_back({name, pool.weight, LimitsText(pool.limits)});
  }
  std::stable_sort(pools.begin(), pools.end(),
                   [](const WhyPool& a, const WhyPool& b) { return a.weight > b.weight; });
  return pools;
}

bool IsInterruption(Cause cause) {
  return cause == Cause::kSpotInterruption || cause == Cause::kRebalanceRecommendation ||
         cause == Cause::kScheduledChange || cause == Cause::kInstanceStopping ||
         cause == Cause::kInstanceTerminating;
}

// The window's fold, building the report as it goes.
class Collector {
 public:
  explicit Collector(WhyReport& report) : report_(report) {}

  // Before `event` is folded into `state`.
  void Before(const State& state, const Event& event, Seq seq) {
    if (const auto* launched = std::get_if<FleetLaunched>(&event)) {
      OnFleet(state, seq, launched->nodeclaim, launched->errors, launched);
    } else if (const auto* failed = std::get_if<FleetFailed>(&event)) {
      OnFleet(state, seq, failed->nodeclaim, failed->errors, nullptr);
    }
  }

  // After `event` was folded into `state`, giving `out`.
  void After(const State& state, const Output& out, Seq seq) {
    std::optional<std::size_t> asked;  // The change this step's launches are for.
    for (const Decision& d : out.decisions) {
      if (const auto* p = std::get_if<ProvisioningDecision>(&d.body)) {
        if (p->new_claims.empty()) continue;
        asked = report_.changes.size();
        report_.changes.push_back(ScaleUp(state, d, *p, seq));
      } else if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) {
        NoteHeld(d, *x, seq);
        if (auto change = Disruption(d, *x, seq)) {
          asked = report_.changes.size();
          report_.changes.push_back(std::move(*change));
        }
      } else if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) {
        OnLifecycle(d, *l, seq);
      }
    }
    for (const Command& c : out.commands) {
      if (const auto* launch = std::get_if<LaunchInstance>(&c.body); launch && asked) {
        launched_for_[launch->nodeclaim] = {*asked, launch->overrides};
        WhyChange& change = report_.changes[*asked];
        if (change.kind != WhyKind::kScaleUp) change.replacements.push_back(launch->nodeclaim);
      }
    }
    if (asked && report_.changes[*asked].kind != WhyKind::kScaleUp) {
      PlannedMoves(state, report_.changes[*asked]);
    }
  }

 private:
  void NoteHeld(const Decision& d, const DisruptionDecision& x, Seq seq) {
    for (const DisruptionCandidate& c : x.candidates) {
      if (c.cause != Cause::kBalancedScore) continue;
      auto it = std::find_if(report_.held.begin(), report_.held.end(),
                             [&](const WhyHeld& h) { return h.nodeclaim == c.nodeclaim; });
      if (it == report_.held.end()) {
        it = std::upper_bound(
            report_.held.begin(), report_.held.end(), c.nodeclaim,
            [](const std::string& name, const WhyHeld& h) { return name < h.nodeclaim; });
        it = report_.held.insert(it, WhyHeld{});
      }
      *it = {seq, d.at, c.nodeclaim, c.nodepool, c.outcome};
    }
  }

  WhyChange ScaleUp(const State& state, const Decision& d, const ProvisioningDecision& p, Seq seq) {
    WhyChange change;
    change.kind = WhyKind::kScaleUp;
    change.seq = seq;
    change.at = d.at;
    change.batch_opened = p.batch_opened;
    change.pools = PoolsOf(state);
    std::map<std::string, std::int64_t> workloads;
    for (const PodOutcome& pod : p.pods) {
      ++change.pods;
      ++workloads[WorkloadOf(pod.pod)];
      if (pod.target.empty()) change.unschedulable.push_back(pod.pod + ": " + pod.reason);
    }
    for (const auto& [name, n] : workloads) change.workloads.push_back({name, n});
    for (const ClaimPlan& plan : p.new_claims) change.nodeclaims.push_back(plan.nodeclaim);
    return change;
  }

  // A disruption carried out (not a pass that only looked, nor a proposal still validating).
  // Its candidates are the proposal's, made 15 s before with every candidate the pass looked
  // at and what blocked each (validation looks again at the selected ones alone).
  std::optional<WhyChange> Disruption(const Decision& d, const DisruptionDecision& x, Seq seq) {
    if (x.phase == DisruptionPhase::kProposed) proposals_[x.method] = {seq, x.candidates};
    if (x.phase != DisruptionPhase::kExecuted && x.phase != DisruptionPhase::kReplacing) {
      return std::nullopt;
    }
    WhyChange change;
    change.kind =
        x.method == DisruptionMethod::kInterruption ? WhyKind::kInterruption : WhyKind::kScaleDown;
    change.seq = seq;
    change.at = d.at;
    change.method = x.method;
    change.phase = Name(x.phase);
    change.reason = x.reason;
    change.nodeclaims = x.nodeclaims;
    auto proposed = proposals_.find(x.method);
    change.candidates = proposed != proposals_.end() ? proposed->second.second : x.candidates;
    if (proposed != proposals_.end()) change.proposed_seq = proposed->second.first;
    // An interruption's candidates carry what the message said.
    for (const DisruptionCandidate& c : x.candidates) {
      if (change.cause == Cause::kNone && IsInterruption(c.cause)) change.cause = c.cause;
    }
    change.budgets = x.budgets;
    change.prices = x.prices;
    for (const auto& claim : x.nodeclaims) disrupted_[claim] = report_.changes.size();
    return change;
  }

  void OnLifecycle(const Decision& d, const LifecycleDecision& l, Seq seq) {
    if (l.transition == Transition::kEvicted) {
      if (auto change = ChangeOf(l.nodeclaim)) {
        ++report_.changes[*change].evicted;
        report_.changes[*change].evicted_seq = seq;
      }
      return;
    }
    if (l.transition != Transition::kDeleting && l.transition != Transition::kInterrupted) return;
    if (auto known = ChangeOf(l.nodeclaim)) {
      WhyChange& change = report_.changes[*known];
      if (change.cause == Cause::kNone) change.cause = l.cause;
      return;
    }
    // Capacity going without a disruption decision in the window: an interruption, a timeout,
    // an expiry, a deletion through the API, or the deletion step of a disruption decided
    // before the window (a replacement waited for).
    WhyChange change;
    const bool disrupted =
        l.cause == Cause::kEmpty || l.cause == Cause::kUnderutilized || l.cause == Cause::kDrifted;
    change.kind = IsInterruption(l.cause) ? WhyKind::kInterruption
                  : disrupted             ? WhyKind::kScaleDown
                                          : WhyKind::kLifecycle;
    change.seq = seq;
    change.at = d.at;
    const PodMoves moves = SplitMoves(l.reason);
    change.reason = moves.text;
    change.cause = l.cause;
    change.nodeclaims = {l.nodeclaim};
    AddMoves(moves.moves, nullptr, change);
    disrupted_[l.nodeclaim] = report_.changes.size();
    report_.changes.push_back(std::move(change));
  }

  std::optional<std::size_t> ChangeOf(const std::string& claim) const {
    auto it = disrupted_.find(claim);
    if (it == disrupted_.end()) return std::nullopt;
    return it->second;
  }

  // The selected candidates' planned moves ("its pods move: ns/a -> node, ns/b -> #0"), by
  // destination: a node by its NodeClaim, "#k" by the k-th replacement's name.
  static void PlannedMoves(const State& state, WhyChange& change) {
    std::vector<std::pair<std::string, std::string>> moves;
    for (const DisruptionCandidate& c : change.candidates) {
      if (std::find(change.nodeclaims.begin(), change.nodeclaims.end(), c.nodeclaim) ==
          change.nodeclaims.end()) {
        continue;
      }
      for (auto& move : SplitMoves(c.outcome).moves) moves.push_back(std::move(move));
    }
    AddMoves(moves, &state, change);
  }

  // `moves` counted by destination. Without `state` a node's NodeClaim is not looked up.
  static void AddMoves(const std::vector<std::pair<std::string, std::string>>& moves,
                       const State* state, WhyChange& change) {
    std::map<std::string, std::int64_t> to;
    for (const auto& [pod, target] : moves) ++to[target];
    for (const auto& [target, pods] : to) {
      WhyDestination d;
      d.pods = pods;
      if (target.starts_with('#')) {
        const std::size_t k = std::stoul(target.substr(1));
        d.replacement = true;
        if (k < change.replacements.size()) d.nodeclaim = change.replacements[k];
      } else {
        d.node = target;
        if (state != nullptr) {
          state->lifecycle.claims_by_node.ForEach(target,
                                                  [&](const std::string& c) { d.nodeclaim = c; });
        }
      }
      change.moved.push_back(std::move(d));
    }
  }

  void OnFleet(const State& state, Seq seq, const std::string& claim,
               const std::vector<FleetError>& errors, const FleetLaunched* launched) {
    auto asked = launched_for_.find(claim);
    if (asked == launched_for_.end()) return;
    WhyLaunch launch;
    launch.seq = seq;
    launch.at = state.now;
    launch.nodeclaim = claim;
    if (auto c = state.lifecycle.nodeclaims.find(claim); c != state.lifecycle.nodeclaims.end()) {
      launch.nodepool = c->second.nodepool;
    }
    for (const LaunchOverride& o : asked->second.overrides) {
      launch.offered.push_back({o.instance_type, o.zone, o.capacity_type, o.price});
    }
    for (const FleetError& e : errors) {
      launch.unavailable.push_back(e.instance_type + "/" + e.zone + "/" + e.capacity_type + ": " +
                                   e.message);
    }
    if (launched != nullptr) {
      launch.launched = true;
      launch.instance_type = launched->instance_type;
      launch.zone = launched->zone;
      launch.capacity_type = launched->capacity_type;
      launch.price = launched->price;
    }
    report_.changes[asked->second.change].launches.push_back(std::move(launch));
  }

  struct Asked {
    std::size_t change = 0;
    std::vector<LaunchOverride> overrides;
  };
  WhyReport& report_;
  std::map<std::string, Asked> launched_for_;     // NodeClaim -> the change that launched it.
  std::map<std::string, std::size_t> disrupted_;  // NodeClaim -> the change that took it.
  // The latest proposal of each method: its event and its candidates.
  std::map<DisruptionMethod, std::pair<Seq, std::vector<DisruptionCandidate>>> proposals_;
};

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "nothing" : out;
}

std::string LaunchText(const WhyLaunch& l) {
  std::string text = l.launched ? l.instance_type + " " + l.capacity_type + " in " + l.zone +
                                      " at " + DollarsText(l.price) + "/h"
                                : "no instance";
  if (!l.unavailable.empty()) {
    text += l.launched ? ", after " : ": ";
    for (std::size_t i = 0; i < l.unavailable.size(); ++i) {
      text += (i ? "; " : "") + l.unavailable[i];
    }
  }
  return text;
}

std::string WorkloadsText(const std::vector<WhyWorkload>& workloads) {
  std::string text;
  for (const auto& w : workloads) {
    text += (text.empty() ? "" : ", ") + std::to_string(w.pods) + " " + w.name;
  }
  return text;
}

// "13 pods: 9 to general-kzbp6 (node i-0036...), 4 to the new general-pr77x".
std::string MovedText(const WhyChange& c) {
  std::int64_t total = 0;
  std::string parts;
  for (const auto& d : c.moved) {
    total += d.pods;
    std::string where = d.replacement         ? (d.nodeclaim.empty() ? std::string("a replacement")
                                                                     : "the new " + d.nodeclaim)
                        : d.nodeclaim.empty() ? "node " + d.node
                                              : d.nodeclaim + " (node " + d.node + ")";
    parts += (parts.empty() ? "" : ", ") + std::to_string(d.pods) + " to " + where;
  }
  return total == 0 ? "" : std::to_string(total) + " pods: " + parts;
}

// One sentence per change, for the answer.
std::string Sentence(const WhyChange& c) {
  const std::string when = "at " + ClockText(c.at) + " ";
  switch (c.kind) {
    case WhyKind::kScaleUp: {
      std::string text = when + "a batch of " + std::to_string(c.pods) + " pods (" +
                         WorkloadsText(c.workloads) + ") launched " +
                         std::to_string(c.nodeclaims.size()) + " NodeClaim(s)";
      for (const auto& l : c.launches) {
        text += "; " + l.nodeclaim + ": " + LaunchText(l);
      }
      return text;
    }
    case WhyKind::kScaleDown: {
      std::string text =
          when + (c.method ? Name(*c.method) : CauseName(c.cause)) + " took " + Join(c.nodeclaims);
      if (!c.reason.empty() && c.candidates.empty()) text += " (" + c.reason + ")";
      if (!c.replacements.empty()) text += ", replaced by " + Join(c.replacements);
      if (c.prices.saving.value != 0) {
        text += ", saving " + DollarsText(c.prices.saving) + "/h" +
                (c.replacements.empty() ? "" : " at the replacements' first choice");
      }
      return text;
    }
    case WhyKind::kInterruption:
      return when + "an interruption (" + CauseName(c.cause) + ") took " +
             (c.nodeclaims.empty() ? std::string("a node") : c.nodeclaims.front());
    case WhyKind::kLifecycle:
      return when + (c.nodeclaims.empty() ? std::string("a NodeClaim") : c.nodeclaims.front()) +
             " went: " + c.reason;
  }
  return when;
}

std::string CountsText(const WhyCounts& c) {
  return std::to_string(c.nodes) + " nodes, " + DollarsText(c.cost) + "/h, " +
         std::to_string(c.pending) + " pending pods";
}

}  // namespace

const char* Name(WhyKind kind) {
  switch (kind) {
    case WhyKind::kScaleUp:
      return "scale-up";
    case WhyKind::kScaleDown:
      return "scale-down";
    case WhyKind::kInterruption:
      return "interruption";
    case WhyKind::kLifecycle:
      return "lifecycle";
  }
  return "?";
}

WhyReport Why(const log::EventLog& log, Instant at, Duration window) {
  WhyReport report;
  report.at = at;
  report.from = at - Duration{window.value / 2};
  report.to = at + Duration{window.value / 2};
  const Seq start = SeqAtTime(log, report.from);
  // A window that opens before the log's first tick folds from nothing (to FoldTo, 0 would mean
  // the whole log).
  State state = start.value == 0 ? State{} : FoldTo(log, start, true);
  report.before = CountsOf(state);
  report.before.at = report.from;
  bool around = false;
  Collector collect(report);
  log.Scan(start + 1, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    if (const auto* tick = std::get_if<Tick>(event)) {
      if (tick->now > report.to) return false;
      if (!around && tick->now > at) {
        report.around = CountsOf(state);
        report.around.at = at;
        around = true;
      }
    }
    const Seq seq{record.seq};
    collect.Before(state, *event, seq);
    const Output out = Step(state, seq, *event);
    collect.After(state, out, seq);
    return true;
  });
  if (!around) {
    report.around = CountsOf(state);
    report.around.at = at;
  }
  report.after = CountsOf(state);
  report.after.at = report.to;

  std::string answer = "Between " + ClockText(report.from) + " and " + ClockText(report.to) +
                       " the cluster went from " + CountsText(report.before) + " to " +
                       CountsText(report.after) + ".";
  if (report.changes.empty()) {
    answer += " Nothing launched or went in that window.";
  } else {
    answer += " ";
    for (std::size_t i = 0; i < report.changes.size(); ++i) {
      std::string sentence = Sentence(report.changes[i]);
      if (i == 0) sentence[0] = static_cast<char>(std::toupper(sentence[0]));
      answer += sentence + (i + 1 < report.changes.size() ? "; " : ".");
    }
  }
  if (!report.held.empty()) {
    const std::size_t n = report.held.size();
    answer += " Consolidation held back " + std::to_string(n) + (n == 1 ? " node" : " nodes") +
              " of Balanced NodePools: the savings did not outweigh the disruption.";
  }
  report.answer = std::move(answer);
  return report;
}

std::string WhyText(const WhyReport& r) {
  std::string out = r.answer + "\n";
  // Every line of evidence ends with the sequence number of the record it comes from.
  auto add = [&out](const std::string& text, Seq seq) {
    out += "  " + text + "  (seq " + std::to_string(seq.value) + ")\n";
  };
  for (const WhyChange& c : r.changes) {
    out += "\n" + ClockText(c.at) + "  " + Name(c.kind) + "\n";
    if (c.kind == WhyKind::kScaleUp) {
      add("batch opened " + ClockText(c.batch_opened) + ", closed " + ClockText(c.at) + " after " +
              DurationText(c.at - c.batch_opened) + ": " + std::to_string(c.pods) + " pods (" +
              WorkloadsText(c.workloads) + ")",
          c.seq);
      std::string pools;
      for (const auto& p : c.pools) {
        pools += (pools.empty() ? "" : ", ") + p.name + " (weight " + std::to_string(p.weight) +
                 (p.limits.empty() ? "" : ", limits " + p.limits) + ")";
      }
      add("NodePools by weight: " + pools, c.seq);
      for (const auto& u : c.unschedulable) add("no place: " + u, c.seq);
    } else {
      if (c.method) add("method " + std::string(Name(*c.method)) + ", " + c.phase, c.seq);
      if (!c.reason.empty()) add("reason: " + c.reason, c.seq);
      if (c.cause != Cause::kNone) add("cause: " + std::string(CauseName(c.cause)), c.seq);
      const Seq proposed = c.proposed_seq.value != 0 ? c.proposed_seq : c.seq;
      for (const auto& cand : c.candidates) {
        add("candidate " + cand.nodeclaim + " (" + cand.nodepool +
                "): " + SplitMoves(cand.outcome).text,
            proposed);
      }
      if (!c.replacements.empty()) add("replaced by " + Join(c.replacements), c.seq);
      for (const auto& b : c.budgets) add(BudgetText(b), c.seq);
      if (std::string moved = MovedText(c); !moved.empty()) add("pods to move: " + moved, proposed);
      if (c.evicted > 0) {
        add("pods evicted in the window: " + std::to_string(c.evicted) + ", the last",
            c.evicted_seq);
      }
    }
    for (const auto& l : c.launches) {
      add(ClockText(l.at) + " " + l.nodeclaim + " (" + l.nodepool + "): " + LaunchText(l), l.seq);
    }
  }
  if (!r.held.empty()) out += "\nheld back by a Balanced score\n";
  for (const WhyHeld& h : r.held) {
    add(ClockText(h.at) + " " + h.nodeclaim + " (" + h.nodepool +
            "): " + SplitMoves(h.outcome).text,
        h.seq);
  }
  return out;
}

namespace {

using nlohmann::json;

json LaunchJson(const WhyLaunch& l) {
  json offered = json::array();
  for (const auto& o : l.offered) {
    offered.push_back({{"instance_type", o.instance_type},
                       {"zone", o.zone},
                       {"capacity_type", o.capacity_type},
                       {"price", o.price.value}});
  }
  return {{"seq", l.seq.value},
          {"at", Rfc3339Text(l.at)},
          {"nodeclaim", l.nodeclaim},
          {"nodepool", l.nodepool},
          {"launched", l.launched},
          {"instance_type", l.instance_type},
          {"zone", l.zone},
          {"capacity_type", l.capacity_type},
          {"price", l.price.value},
          {"offered", offered},
          {"unavailable", l.unavailable}};
}

void ScaleUpJson(const WhyChange& c, json& j) {
  j["batch"] = {
      {"opened", Rfc3339Text(c.batch_opened)}, {"closed", Rfc3339Text(c.at)}, {"pods", c.pods}};
  json workloads = json::array();
  for (const auto& w : c.workloads) workloads.push_back({{"name", w.name}, {"pods", w.pods}});
  j["batch"]["workloads"] = workloads;
  j["unschedulable"] = c.unschedulable;
  json pools = json::array();
  for (const auto& p : c.pools) {
    pools.push_back({{"name", p.name}, {"weight", p.weight}, {"limits", p.limits}});
  }
  j["nodepools"] = pools;
}

void ScaleDownJson(const WhyChange& c, json& j) {
  if (c.method) j["method"] = Name(*c.method);
  j["phase"] = c.phase;
  j["reason"] = c.reason;
  j["cause"] = CauseName(c.cause);
  json candidates = json::array();
  for (const auto& cand : c.candidates) {
    candidates.push_back({{"nodeclaim", cand.nodeclaim},
                          {"nodepool", cand.nodepool},
                          {"outcome", cand.outcome},
                          {"cause", CauseName(cand.cause)},
                          {"subject", cand.subject}});
  }
  j["candidates"] = candidates;
  j["proposed_seq"] = c.proposed_seq.value;
  json budgets = json::array();
  for (const auto& b : c.budgets) {
    budgets.push_back({{"nodepool", b.nodepool},
                       {"reason", b.reason},
                       {"allowed", b.allowed},
                       {"detail", b.detail}});
  }
  j["budgets"] = budgets;
  j["removed"] = c.prices.removed.value;
  j["saving"] = c.prices.saving.value;
  json moved = json::array();
  for (const auto& d : c.moved) {
    moved.push_back({{"node", d.node},
                     {"nodeclaim", d.nodeclaim},
                     {"replacement", d.replacement},
                     {"pods", d.pods}});
  }
  j["moved"] = moved;
  j["replacements"] = c.replacements;
  j["evicted"] = c.evicted;
  j["evicted_seq"] = c.evicted_seq.value;
}

}  // namespace

std::string WhyJson(const WhyReport& r) {
  auto counts = [](const WhyCounts& c) {
    return json{{"at", Rfc3339Text(c.at)},
                {"nodes", c.nodes},
                {"cost", c.cost.value},
                {"pending", c.pending}};
  };
  json changes = json::array();
  for (const WhyChange& c : r.changes) {
    json j{{"kind", Name(c.kind)},
           {"seq", c.seq.value},
           {"at", Rfc3339Text(c.at)},
           {"nodeclaims", c.nodeclaims}};
    if (c.kind == WhyKind::kScaleUp) {
      ScaleUpJson(c, j);
    } else {
      ScaleDownJson(c, j);
    }
    json launches = json::array();
    for (const auto& l : c.launches) launches.push_back(LaunchJson(l));
    j["launches"] = launches;
    changes.push_back(std::move(j));
  }
  json held = json::array();
  for (const WhyHeld& h : r.held) {
    held.push_back({{"seq", h.seq.value},
                    {"at", Rfc3339Text(h.at)},
                    {"nodeclaim", h.nodeclaim},
                    {"nodepool", h.nodepool},
                    {"outcome", h.outcome}});
  }
  json doc{{"at", Rfc3339Text(r.at)},
           {"window", {{"from", Rfc3339Text(r.from)}, {"to", Rfc3339Text(r.to)}}},
           {"before", counts(r.before)},
           {"around", counts(r.around)},
           {"after", counts(r.after)},
           {"answer", r.answer},
           {"changes", changes},
           {"held", held}};
  return doc.dump(2) + "\n";
}

}  // namespace tenon::replay
