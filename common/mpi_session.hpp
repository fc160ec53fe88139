// MPI for the lifetime of a main: MPI_Init_thread with the thread level the phase needs (checked against what
// the library provides), errors returned rather than fatal so MPI_CHECK can decode them, MPI_Finalize at the end.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ob {

class MpiSession {
 public:
  // Throws CallFailure when MPI cannot give `required` (e.g. MPI_THREAD_MULTIPLE).
  MpiSession(int& argc, char**& argv, int required);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int provided() const { return provided_; }

 private:
  int rank_ = 0, size_ = 1, provided_ = MPI_THREAD_SINGLE;
};

// This process's rank among the ranks of its node (MPI_COMM_TYPE_SHARED).
int local_rank(MPI_Comm comm);

// The GPU a rank takes among the `devices` it sees: its rank on the node modulo them. Both layouts sites use then give
// each rank its own GPU: every task sees every GPU of the node (local rank r takes device r), or each task sees only
// its own (Slurm's --gpus-per-task or --gpu-bind, CUDA_VISIBLE_DEVICES set per task: device 0).
int gpu_for_rank(int local_rank, int devices);

// Given the GPU each rank of a node took (its PCI bus id, in local rank order): "" when no two share one, else
// "local ranks A and B share GPU <id>".
std::string shared_gpu(const std::vector<std::string>& ids);

// Every rank's `text` on every rank of its node (MPI_COMM_TYPE_SHARED), in local rank order. A collective.
std::vector<std::string> gather_on_node(const std::string& text, MPI_Comm comm);

// The lowest rank's non-empty `text`, on every rank ("" when every rank's is empty): a detail only the rank that
// found a failure knows (the wrong element), for the message rank 0 prints.
std::string first_nonempty(const std::string& text, MPI_Comm comm);

// Every rank's `text` on `root`, in rank order (other ranks get an empty list).
std::vector<std::string> gather_strings(const std::string& text, MPI_Comm comm, int root = 0);

// Every rank's `mine` on rank 0 as a JSON array, in rank order (others get an empty array). A collective.
nlohmann::json gather_json(const nlohmann::json& mine, MPI_Comm comm);

// Every rank's argv on rank 0, in rank order (the metadata's "rank_command_lines"). A collective.
std::vector<std::vector<std::string>> rank_command_lines(int argc, char** argv, MPI_Comm comm);

// Every rank's host name on rank 0, in rank order (the metadata's "hosts"). A collective.
std::vector<std::string> rank_hosts(MPI_Comm comm);

}  // namespace ob
