// Resource arithmetic over the fixed dimensions and the extended-resource map.
#include <algorithm>

#include "model/pod_rules.h"

namespace tenon {
namespace {

// `a` op= `b`, dimension by dimension; a dimension that comes to 0 is dropped (and one `a`
// already held at 0). No map is copied, and none is touched when both are empty (most pods and
// instance types ask for no extended resource).
template <class Op>
void CombineInto(std::map<std::string, std::int64_t>& a,
                 const std::map<std::string, std::int64_t>& b, Op op) {
  for (const auto& [name, quantity] : b) {
    std::int64_t& slot = a[name];
    slot = op(slot, quantity);
  }
  if (!a.empty()) std::erase_if(a, [](const auto& kv) { return kv.second == 0; });
}

std::int64_t Get(const std::map<std::string, std::int64_t>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

Resources& operator+=(Resources& a, const Resources& b) {
  a.cpu += b.cpu;
  a.memory += b.memory;
  a.pods += b.pods;
  CombineInto(a.extended, b.extended, std::plus<>());
  return a;
}

Resources& operator-=(Resources& a, const Resources& b) {
  a.cpu -= b.cpu;
  a.memory -= b.memory;
  a.pods -= b.pods;
  CombineInto(a.extended, b.extended, std::minus<>());
  return a;
}

Resources operator+(const Resources& a, const Resources& b) {
  Resources out = a;
  return out += b;
}

Resources operator-(const Resources& a, const Resources& b) {
  Resources out = a;
  return out -= b;
}

Resources Max(const Resources& a, const Resources& b) {
  Resources out{std::max(a.cpu, b.cpu), std::max(a.memory, b.memory), std::max(a.pods, b.pods),
                a.extended};
  CombineInto(out.extended, b.extended, [](auto x, auto y) { return std::max(x, y); });
  return out;
}

Resources Min(const Resources& a, const Resources& b) {
  Resources out{std::min(a.cpu, b.cpu), std::min(a.memory, b.memory), std::min(a.pods, b.pods), {}};
  for (const auto& [name, quantity] : a.extended) {
    std::int64_t other = Get(b.extended, name);
    if (std::min(quantity, other) != 0) out.extended[name] = std::min(quantity, other);
  }
  return out;
}

bool Fits(const Resources& need, const Resources& have) {
  if (need.cpu > have.cpu || need.memory > have.memory || need.pods > have.pods) return false;
  return std::all_of(need.extended.begin(), need.extended.end(), [&](const auto& kv) {
    return kv.second <= 0 || kv.second <= Get(have.extended, kv.first);
  });
}

Resources PodRequests(const std::vector<ContainerRequests>& containers,
                      const std::vector<ContainerRequests>& init_containers,
                      const Resources& overhead) {
  Resources sum;
  for (const auto& c : containers) sum += c.requests;
  Resources sidecars;
  Resources init_peak;
  for (const auto& c : init_containers) {
    if (c.sidecar) {
      sidecars += c.requests;
      init_peak = Max(init_peak, sidecars);
    } else {
      init_peak = Max(init_peak, sidecars + c.requests);
    }
  }
  Resources out = Max(sum + sidecars, init_peak) + overhead;
  out.pods = 0;  // The pod itself is counted once by the scheduler, not by its containers.
  return out;
}

}  // namespace tenon
