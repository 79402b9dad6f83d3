// Consolidation's trials, sped up by the pass's base run: the waiting pods placed once, alone,
// and each trial trying for each of them only the bins it changed (scheduler_pass.h,
// Pass::BaseRun, says why that is exact).
#include <algorithm>

#include "reducers/scheduler_pass.h"

namespace tenon::core::placement {

void Pass::MarkExtra(std::size_t index) {
  extra_[index] = true;
}

void Pass::MarkMissing(std::size_t index) {
  if (missing_[index]) return;
  missing_[index] = true;
  missing_list_.insert(std::upper_bound(missing_list_.begin(), missing_list_.end(), index), index);
}

bool Pass::PlaceByHint(PodView& v) {
  const std::size_t end = v.hint == kFitsNoBin ? existing_.size() : v.hint;
  const auto& refused = refused_existing_[v.shape];
  auto try_bin = [&](std::size_t i) {
    return Holds(rooms_[i], v.need) && !(i < refused.size() && refused[i]) &&
           TryExisting(v, existing_[i], i);
  };
  // A bin before the hinted one that only gained pods refuses the pod as it did in the base
  // run: it has no more room and no fewer ports. Only one that lost some may take it.
  for (std::size_t i : missing_list_) {
    if (i >= end) break;
    if (try_bin(i)) {
      if (v.hint != kFitsNoBin) MarkMissing(v.hint);
      return true;
    }
  }
  if (v.hint == kFitsNoBin) return false;
  if (try_bin(v.hint)) return true;
  MarkMissing(v.hint);
  return false;
}

bool Pass::Defer(PodView& v) {
  const std::size_t hint = v.hint;
  if (missing_[hint]) return false;
  const Pod& pod = *v.pod;
  const Resources need{pod.requests.cpu, pod.requests.memory, 1, {}};
  // A bin that only gained pods takes the pod when it still has the room, as long as room is
  // all that could have changed for it: no host ports, no extended resources.
  if (extra_[hint] && (!pod.constraints->host_ports.empty() || !pod.requests.extended.empty() ||
                       !Holds(rooms_[hint], need))) {
    return false;
  }
  for (std::size_t i : missing_list_) {
    if (i >= hint) break;
    if (Holds(rooms_[i], need)) return false;
  }
  Bin& bin = existing_[hint];
  Save(bin);
  Resources charge = pod.requests;
  charge.pods = 1;
  bin.remaining -= charge;
  for (const auto& p : pod.constraints->host_ports) bin.host_ports.push_back(p);
  SetRoom(hint, RoomOf(bin));
  v.deferred = true;
  return true;
}

std::vector<std::size_t> Pass::BaseRun(const std::vector<const Pod*>& pending) {
  BeginTrial({}, true);
  const ScheduleResult result = Run(pending);
  std::vector<std::size_t> hints;
  hints.reserve(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const std::string& target = result.pods[i].target;
    const std::size_t* index = views_[i].tries == 1 && !target.empty() && target.front() != '#'
                                   ? existing_index_.Find(target)
                                   : nullptr;
    hints.push_back(index != nullptr ? *index : kFitsNoBin);
  }
  EndTrial();
  return hints;
}

}  // namespace tenon::core::placement
