// Timeline events (who ran what, when) written as CSV and as Chrome trace JSON for Perfetto / chrome://tracing.
// Times are microseconds from the run's common origin; ranks are merged onto rank 0 with gather_timeline().
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/csv_writer.hpp"

namespace ob {

struct TimelineEvent {
  int rank = 0;
  std::string lane;  // "compute", "comm", a thread id, a stream name
  std::string name;  // what ran: "compute", "allreduce", a kernel name
  int iter = 0;
  int chunk = -1;  // -1 when the event belongs to no chunk
  double start_us = 0;
  double end_us = 0;
  std::string point = {};  // the sweep point it belongs to ("bucket_mb=25"); empty outside a sweep
};

// rank, lane, name, iter, chunk, start_us, end_us, point
extern const std::vector<std::string> kTimelineColumns;

// Marks every event as belonging to sweep point `label`.
void label_point(std::vector<TimelineEvent>& events, const std::string& label);

CsvTable timeline_csv(const std::vector<TimelineEvent>& events);

// A power sample for the trace's counter track.
struct PowerPoint {
  int rank = 0, gpu = 0;
  double t_us = 0, watts = 0;
};

// The events and power samples of a timeline or power CSV as the binaries write them (the columns found by name;
// `point` optional, for timelines written before it existed). Throws std::invalid_argument naming a missing column
// or the row of a value that is not a number.
std::vector<TimelineEvent> timeline_from_csv(const CsvTable& table);
std::vector<PowerPoint> power_from_csv(const CsvTable& table);

// Complete ("X") events, one process (pid) per rank, or per sweep point and rank ("bucket_mb=25 · rank 0"), one
// track (tid) per lane, with process_name / thread_name metadata events; a
// lane's events that overlap in time without nesting (requests in flight at once) go on extra tracks "<lane> #2",
// ...; flow arrows ("ready") from the compute event that ended last before each "<mode>:comm" event to it; power
// samples as a counter track per rank.
nlohmann::json chrome_trace(const std::vector<TimelineEvent>& events, const std::vector<PowerPoint>& power = {});

// chrome_trace() as the files hold it: compact JSON, text that is not UTF-8 replaced.
std::string trace_text(const std::vector<TimelineEvent>& events, const std::vector<PowerPoint>& power = {});

// Collects every rank's events on `root` (others get an empty vector).
std::vector<TimelineEvent> gather_timeline(const std::vector<TimelineEvent>& local, MPI_Comm comm, int root = 0);

// True when [a.start, a.end) and [b.start, b.end) intersect with positive length.
bool overlaps_in_time(const TimelineEvent& a, const TimelineEvent& b);

}  // namespace ob
