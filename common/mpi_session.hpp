// MPI for the lifetime of a main: MPI_Init_thread with the thread level the phase needs (checked against what
// the library provides), errors returned rather than fatal so MPI_CHECK can decode them, MPI_Finalize at the end.
#pragma once

#include <mpi.h>

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

// This process's rank among the ranks of its node (MPI_COMM_TYPE_SHARED): its GPU index.
int local_rank(MPI_Comm comm);

// The lowest rank's non-empty `text`, on every rank ("" when every rank's is empty): a detail only the rank that
// found a failure knows (the wrong element), for the message rank 0 prints.
std::string first_nonempty(const std::string& text, MPI_Comm comm);

// Every rank's `text` on `root`, in rank order (other ranks get an empty list).
std::vector<std::string> gather_strings(const std::string& text, MPI_Comm comm, int root = 0);

}  // namespace ob
