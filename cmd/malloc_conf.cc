// The allocator of the programs that run the controller (tenon, bench_simulate, bench_run):
// jemalloc, linked in place of glibc's malloc because the core's passes allocate and free many
// small objects, and its settings, read by jemalloc from this symbol when the program starts
// (MALLOC_CONF in the environment still wins).
//
// narenas:2 — the controller allocates on two threads that matter (the runtime's and the log
// writer's); jemalloc's default of four arenas per core keeps more partly used pages resident.
// dirty_decay_ms:1000, muzzy_decay_ms:0 — pages freed by a pass (the scheduler's working set,
// a snapshot's copy) go back to the kernel within a second instead of ten: the 3-hour bench's
// peak RSS was 102 MB with the defaults, 83 MB with these, the same CPU.
extern "C" {
// NOLINTNEXTLINE: jemalloc looks this name up; it must be a non-const global with C linkage.
const char* malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
