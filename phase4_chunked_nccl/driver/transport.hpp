// --transport (docs/USAGE.md, "Transports"): how NCCL moves data between the GPUs of one host, chosen through NCCL's
// own variables, set in this process before its first NCCL call. Every rank parses the same options, so every rank
// sets them; the run's metadata records them with the rest of its NCCL environment.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "phase4_chunked_nccl/core/choices.hpp"

namespace phase4 {

// nvlink: none (NCCL's own choice: peer to peer); shm: NCCL_P2P_DISABLE=1 (host shared memory); socket: also
// NCCL_SHM_DISABLE=1, NCCL_NET=Socket and NCCL_SOCKET_IFNAME=lo (its network transport over loopback).
std::vector<std::pair<std::string, std::string>> transport_environment(Transport transport);

// NCCL's socket transport's helper threads per connection and sockets per thread (0: NCCL's own, not set): a faster
// network between emulated nodes (--socket-threads, --socks-per-thread).
std::vector<std::pair<std::string, std::string>> socket_environment(int threads, int socks_per_thread);

// Sets them all, over whatever the environment held.
void apply_transport(Transport transport, int socket_threads = 0, int socks_per_thread = 0);

// The emulated node of `rank` when `ranks` ranks are split into `nodes` of consecutive ranks (exit 2 naming
// --emulate-nodes when `nodes` does not divide `ranks`), and its NCCL_HOSTID value.
int node_of_rank(int rank, int ranks, int nodes);
std::string emulated_host_id(int node);

}  // namespace phase4
