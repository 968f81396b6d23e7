// library_tuning.h - the Library's tuned dispatch points: a constexpr list of candidate configurations, chosen once per key bucket by kdsl::autotune
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <kdsl/autotune.h>

#include "kernels/library_device.h"
#include "kernels/library_impl.h"

namespace kdsl::kernels::detail {

// A tuned dispatch point's key as each call looks it up: the candidate list's and the kernel
// name's addresses (one per point and weight type) and up to three bucketed sizes, which
// `names` ("rows,N,K") names for the record.
struct TunedKey {
  const void *candidates;
  const std::string *kernel;
  const char *names;
  int64_t a = 0, b = 0, c = 0;
  bool operator==(const TunedKey &o) const { return candidates == o.candidates && kernel == o.kernel && a == o.a && b == o.b && c == o.c; }
  std::string text() const;
};
struct TunedKeyHash {
  size_t operator()(const TunedKey &k) const {
    size_t h = std::hash<const void *>()(k.candidates) ^ (std::hash<const void *>()(k.kernel) << 1);
    for (int64_t v : {k.a, k.b, k.c}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

// A Library's choices at its tuned points: a candidate's index, or -1 in a plan for a key the
// engine will time (every candidate is planned). Kept in the Library's table of objects by
// identity, beside its kernels, so each Library asks kdsl::autotune once per key and its
// per-token calls cost one hash lookup.
using TunedChoices = std::unordered_map<TunedKey, int, TunedKeyHash>;
TunedChoices &tuned_choices(Library::Impl &im);

// Whether tuned points time their candidates: on the CPU, the device kdsl-run tunes, and not in
// a plan that stands for a GPU (GPUs take the defaults until their products are tuned).
inline bool tunes_on_device(const Library::Impl &im) { return dispatches_for_cpu(im); }

// What a tuned dispatch does with the candidate it selected: launch it, or hand back a job
// that compiles it without running (kdsl::autotune runs those jobs in parallel). Recording
// instead of launching there is no kernel, and no job.
struct LaunchIt {
  template <auto K, class... A>
  void operator()(const LibraryKernel<K> &k, const Grid &g, A... args) const {
    k(g, args...);
  }
};
struct CompileIt {
  std::function<void()> *job;
  template <class T>
  static auto placed(T *p, bool device_memory) {
    return PlacedPointer<T>{p, device_memory};
  }
  template <class T>
  static T placed(T v, bool) {
    return v;
  }
  template <auto K, class... A>
  void operator()(const LibraryKernel<K> &k, const Grid &, A... args) const {
    if (!k.kernel) return;
    *job = [kernel = k.kernel, values = std::make_tuple(placed(args, k.device_memory)...)] {
      std::apply([&](const auto &...a) { kernel->warm(a...); }, values);
    };
  }
};

// Calls f.template operator()<Cs[i]>() for the i-th configuration of the constexpr array Cs.
template <const auto &Cs, class F>
void with_candidate(int i, F &&f) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (void)((i == int(I) ? (f.template operator()<Cs[I]>(), true) : false) || ...);
  }(std::make_index_sequence<std::size(Cs)>{});
}

template <const auto &Cs>
std::vector<std::string> candidate_labels() {
  std::vector<std::string> out;
  for (const auto &c : Cs) out.push_back(c.label());
  return out;
}

// One tuned dispatch point of the Library: Cs, its candidates (Cs[0] the hand-set default),
// `kernel` its name for records and logs, and the bucketed sizes that key the choice.
// dispatch(i, use) selects candidate i's kernel, grid and arguments and passes them to `use`
// (LaunchIt or CompileIt). On the CPU the first call for a key asks kdsl::autotune (which
// times the candidates on these very arguments: the Library's products are pure, so reruns
// overwrite `out` with the same values), and the Library keeps the choice for its later
// calls; the chosen candidate then runs once more for the result. GPUs take the default until
// their products are tuned. Recording instead of launching (a kernel plan) records the choice
// a launch would make: the recorded or default one, or, where the engine would time them, all
// the candidates.
template <const auto &Cs, class Dispatch>
void launch_tuned(Library::Impl &im, const std::string &kernel, const char *names, int64_t a, int64_t b, int64_t c, Dispatch &&dispatch) {
  constexpr int n = int(std::size(Cs));
  auto launch = [&](int i) { dispatch(i, LaunchIt{}); };
  if (!tunes_on_device(im)) return launch(0);
  const TunedKey key{&Cs, &kernel, names, a, b, c};
  const bool plan = im.recorder && !im.recorder->launches();
  TunedChoices &tuned = tuned_choices(im);
  auto it = tuned.find(key);
  if (it == tuned.end()) {
    Tuning tuning{kernel, key.text(), candidate_labels<Cs>(), 0};
    if (plan) {
      std::optional<int> known = autotune_choice(im.device, tuning);
      it = tuned.emplace(key, known ? *known : -1).first;
    } else {
      auto compile = [&](int i) {
        std::function<void()> job;
        dispatch(i, CompileIt{&job});
        return job;
      };
      it = tuned.emplace(key, autotune(im.device, tuning, compile, launch).choice).first;
    }
  }
  if (it->second >= 0) return launch(it->second);
  for (int i = 0; i < n; ++i) launch(i);  // a plan of a key the engine will time
}

}  // namespace kdsl::kernels::detail
