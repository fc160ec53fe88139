# The installed overlap_bench package: overlap_bench::overlap_common (options, timing, statistics, cross-rank
# reduction, CSV, timeline, metadata) and the packages it links, found as the suite's own build finds them.
include(${CMAKE_CURRENT_LIST_DIR}/OverlapPackages.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/overlap_benchTargets.cmake)
