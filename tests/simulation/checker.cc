#include "tests/simulation/checker.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "log/codec.h"

namespace tenon::simtest {
namespace {

constexpr std::int64_t kCpuReserveMillis = 250;
constexpr std::int64_t kMemoryReserveBytes = 1536ll << 20;

std::string ClockOf(Instant t) {
  std::int64_t s = t.value / kSecond.value;
  return std::to_string((s / 3600) % 24) + ":" + std::to_string((s / 60) % 60) + ":" +
         std::to_string(s % 60);
}

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const auto& t : tolerations) {
    if (t.effect && *t.effect != taint.effect) continue;
    if (t.key.empty() && t.op_exists) return true;
    if (t.key == taint.key && (t.op_exists || t.value == taint.value)) return true;
  }
  return false;
}

// The values an In requirement on `key` allows in `pool` (empty: any).
std::vector<std::string> Allowed(const NodePool& pool, const std::string& key) {
  for (const auto& r : pool.requirements) {
    if (r.key == key && r.op == RequirementOp::kIn) return r.values;
  }
  return {};
}

bool Admits(const std::vector<std::string>& allowed, const std::string& value) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

}  // namespace

Resources LowerBoundAllocatable(const InstanceType& type) {
  Resources r;
  r.cpu = Millicores{type.cpu.value - kCpuReserveMillis};
  r.memory = Bytes{type.memory.value / 10 * 9 - kMemoryReserveBytes};
  r.pods = type.max_enis > 0 ? type.max_enis * (type.ipv4_per_eni - 1) + 2 : 110;
  return r;
}

Checker::Checker(const sim::Scenario& scenario) : scenario_(scenario) {
  for (const auto& t : scenario.catalog) types_[t.name] = &t;
}

void Checker::Fail(const sim::World& world, const std::string& what) {
  violations_.push_back(ClockOf(world.now()) + " " + what);
}

std::int64_t Checker::BudgetAllows(const NodePool& pool, std::int64_t nodes) const {
  std::int64_t least = nodes;  // No budget: every node.
  for (const auto& b : pool.budgets) {
    std::int64_t n = 0;
    if (b.nodes.ends_with("%")) {
      std::int64_t percent = std::stoll(b.nodes.substr(0, b.nodes.size() - 1));
      n = (percent * nodes + 99) / 100;  // Rounded up, as Kubernetes scales percents.
    } else {
      n = std::stoll(b.nodes);
    }
    least = std::min(least, n);
  }
  return least;
}

void Checker::OnGracefulDisruption(const sim::World& world, const DisruptionDecision& d) {
  std::map<std::string, std::int64_t> taken;
  for (const auto& name : d.nodeclaims) {
    auto claim = world.nodeclaims().find(name);
    if (claim == world.nodeclaims().end()) continue;
    disrupting_[name] = claim->second;
    // No pod with karpenter.sh/do-not-disrupt (still in force) on a node disrupted gracefully;
    // but drift in a pool with a terminationGracePeriod is Karpenter's eventual disruption.
    auto pool = std::find_if(scenario_.nodepools.begin(), scenario_.nodepools.end(),
                             [&](const NodePool& p) { return p.name == claim->second; });
    if (d.method == DisruptionMethod::kDrift && pool != scenario_.nodepools.end() &&
        pool->termination_grace_period) {
      continue;
    }
    for (const auto& [id, instance] : world.instances()) {
      if (instance.nodeclaim != name || instance.node_name.empty()) continue;
      for (const auto& [key, pod] : world.pods()) {
        bool in_force = pod.do_not_disrupt && (!pod.do_not_disrupt_for ||
                                               world.now() < pod.created + *pod.do_not_disrupt_for);
        if (pod.node_name == instance.node_name && in_force) {
          Fail(world, std::string(Name(d.method)) + " disrupted " + name +
                          " running do-not-disrupt pod " + key);
        }
      }
    }
  }
  for (const auto& [name, pool] : disrupting_) ++taken[pool];
  for (const auto& [pool_name, n] : taken) {
    auto pool = std::find_if(scenario_.nodepools.begin(), scenario_.nodepools.end(),
                             [&](const NodePool& p) { return p.name == pool_name; });
    if (pool == scenario_.nodepools.end()) continue;
    std::int64_t nodes = 0;
    for (const auto& [claim, p] : world.nodeclaims()) nodes += p == pool_name ? 1 : 0;
    const std::int64_t allows = BudgetAllows(*pool, nodes);
    if (n > allows) {
      Fail(world, std::string(Name(d.method)) + " " + Name(d.phase) + ": " + std::to_string(n) +
                      " nodes of " + pool_name + " disrupted at once, its budgets allow " +
                      std::to_string(allows) + " of " + std::to_string(nodes));
    }
  }
}

// An instance whose NodeClaim is gone (its launch answer lost, the claim given up) is not the
// pool's any more: it is a leak, which convergence must clean up (AtConvergence).
void Checker::CheckLimits(const sim::World& world) {
  for (const auto& pool : scenario_.nodepools) {
    if (!pool.limits.cpu || over_limit_.contains(pool.name)) continue;
    Millicores used{0};
    for (const auto& [id, instance] : world.instances()) {
      auto type = types_.find(instance.instance_type);
      if (instance.nodepool == pool.name && type != types_.end() &&
          world.nodeclaims().contains(instance.nodeclaim)) {
        used += type->second->cpu;
      }
    }
    if (used > *pool.limits.cpu) {
      over_limit_.insert(pool.name);  // Said once per run.
      Fail(world, "NodePool " + pool.name + " runs " + std::to_string(used.value) +
                      "m CPU, over its limit of " + std::to_string(pool.limits.cpu->value) + "m");
    }
  }
}

void Checker::CheckOneInstancePerClaim(const sim::World& world) {
  for (const auto& [id, instance] : world.instances()) {
    auto& seen = instances_of_[instance.nodeclaim];
    seen.insert(id);
    if (seen.size() == 2) {
      Fail(world, "NodeClaim " + instance.nodeclaim + " has a second instance " + id);
    }
  }
}

namespace {

// The object a command acts on, for telling one retried again and again; empty for commands
// that are not retried per object.
std::string Subject(const Command& command) {
  return std::visit(
      [](const auto& body) -> std::string {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, EvictPod> || std::is_same_v<T, DeletePod>) {
          return body.ns + "/" + body.name;
        } else if constexpr (std::is_same_v<T, LaunchInstance>) {
          return body.nodeclaim;
        } else if constexpr (std::is_same_v<T, TerminateInstance>) {
          return body.instance_id;
        } else if constexpr (std::is_same_v<T, DeleteNodeClaim>) {
          return body.name;
        } else if constexpr (std::is_same_v<T, RemoveFinalizer>) {
          return body.nodeclaim;
        } else {
          return "";
        }
      },
      command.body);
}

// Issued more often than this in a row, each within kRepeatSpacing of the last, a command is
// retried without backing off (the Eviction API and the lifecycle both back off to 10 s and
// more; a fault makes a few in a row at most).
constexpr std::int64_t kRepeatMax = 30;
constexpr Duration kRepeatSpacing{5 * kSecond.value};

}  // namespace

void Checker::CheckCommands(const sim::World& world, const std::vector<Command>& commands) {
  for (const auto& [key, pod] : world.pods()) pods_seen_.insert(key);
  for (const Command& command : commands) {
    if (const auto* launch = std::get_if<LaunchInstance>(&command.body)) {
      if (launch->overrides.empty()) {
        Fail(world, "NodeClaim " + launch->nodeclaim + " sent to launch with no offering");
      }
    }
    if (std::holds_alternative<CreateNodeClaim>(command.body)) ++claims_created_;
    const std::string subject = Subject(command);
    if (subject.empty()) continue;
    Repeats& r = repeats_[log::CommandKind(command) + " " + subject];
    r.streak = r.streak > 0 && world.now() - r.last < kRepeatSpacing ? r.streak + 1 : 1;
    r.last = world.now();
    if (r.streak == kRepeatMax) {
      Fail(world, log::CommandKind(command) + " for " + subject + " issued " +
                      std::to_string(kRepeatMax) + " times in a row, each within " +
                      std::to_string(kRepeatSpacing.value / kSecond.value) +
                      " s of the last: retried without backing off");
    }
  }
  // A pod may need a claim, lose it (capacity, a fault) and need another; a disruption may
  // launch replacements. Far beyond that, claims are made in a loop.
  const std::int64_t bound =
      3 * static_cast<std::int64_t>(pods_seen_.size()) + 2 * disruptions_ + 20;
  if (claims_created_ > bound && !too_many_claims_) {
    too_many_claims_ = true;
    Fail(world, std::to_string(claims_created_) + " NodeClaims made for " +
                    std::to_string(pods_seen_.size()) + " pods and " +
                    std::to_string(disruptions_) + " disruptions: launches in a loop");
  }
}

void Checker::AfterStep(const sim::World& world, const std::vector<Decision>& decisions,
                        const std::vector<Command>& commands) {
  for (const auto& decision : decisions) {
    const auto* d = std::get_if<DisruptionDecision>(&decision.body);
    if (d == nullptr) continue;
    const bool graceful = d->method == DisruptionMethod::kEmptiness ||
                          d->method == DisruptionMethod::kDrift ||
                          d->method == DisruptionMethod::kSingleNodeConsolidation ||
                          d->method == DisruptionMethod::kMultiNodeConsolidation;
    if (graceful &&
        (d->phase == DisruptionPhase::kExecuted || d->phase == DisruptionPhase::kReplacing)) {
      OnGracefulDisruption(world, *d);
      ++disruptions_;
    }
    if (d->phase == DisruptionPhase::kRolledBack) {
      for (const auto& name : d->nodeclaims) disrupting_.erase(name);
    }
  }
  std::erase_if(disrupting_,
                [&](const auto& entry) { return !world.nodeclaims().contains(entry.first); });
  CheckLimits(world);
  CheckOneInstancePerClaim(world);
  CheckCommands(world, commands);
}

bool Checker::PoolCouldHost(const sim::World& world, const NodePool& pool, const Pod& pod) const {
  for (const auto& taint : pool.taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule &&
        !Tolerates(pod.constraints->tolerations, taint)) {
      return false;
    }
  }
  std::vector<std::string> capacity = Allowed(pool, label::kCapacityType);
  for (const auto& [key, value] : pod.constraints->node_selector) {
    if (key == label::kCapacityType) {
      if (!Admits(capacity, value)) return false;
      capacity = {value};
    } else if (auto l = pool.labels.find(key); l == pool.labels.end() || l->second != value) {
      return false;
    }
  }
  // What the pool holds, as Karpenter counts it against the limit: every NodeClaim, also those
  // deleting; one whose instance is gone counted as the pool's largest type (not knowing less).
  const std::vector<std::string> names = Allowed(pool, label::kInstanceType);
  Millicores largest{0};
  for (const auto& [name, type] : types_) {
    if (Admits(names, name)) largest = std::max(largest, type->cpu);
  }
  std::map<std::string, Millicores> claims;
  for (const auto& [claim, p] : world.nodeclaims()) {
    if (p == pool.name) claims[claim] = largest;
  }
  for (const auto& [id, instance] : world.instances()) {
    auto type = types_.find(instance.instance_type);
    auto claim = claims.find(instance.nodeclaim);
    if (claim != claims.end() && type != types_.end()) claim->second = type->second->cpu;
  }
  Millicores used{0};
  for (const auto& [claim, cpu] : claims) used += cpu;
  for (const auto& [name, type] : types_) {
    if (!Admits(names, name)) continue;
    if (pool.limits.cpu && used + type->cpu > *pool.limits.cpu) continue;
    Resources need = pod.requests;
    need.pods = 1;
    if (!Fits(need, LowerBoundAllocatable(*type))) continue;
    for (const auto& o : type->offerings) {
      if (Admits(capacity, o.capacity_type)) return true;
    }
  }
  return false;
}

void Checker::AtConvergence(const sim::World& world, Instant settled_since) {
  for (const auto& [id, instance] : world.instances()) {
    if (!world.nodeclaims().contains(instance.nodeclaim)) {
      Fail(world, "instance " + id + " (" + instance.nodeclaim + ") leaked: no NodeClaim owns it");
    }
  }
  for (const auto& [key, pod] : world.pods()) {
    if (!pod.node_name.empty() || pod.created >= settled_since) continue;
    for (const auto& pool : scenario_.nodepools) {
      if (PoolCouldHost(world, pool, pod)) {
        Fail(world, "pod " + key + " pending since " + ClockOf(pod.created) + " though NodePool " +
                        pool.name + " could host it");
        break;
      }
    }
  }
}

}  // namespace tenon::simtest
