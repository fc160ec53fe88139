"""A job's own traces: read (trace_read, trace_own into trace_model's types), measured (trace_stats, advice), analysed
(analyze, the probe's split), checked (analyze_check, analyze_bench), and traced (trace_job)."""
