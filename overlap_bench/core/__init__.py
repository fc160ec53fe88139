"""The small core every tool stands on: command-line plumbing and the one input and output policy (ob_tool), the CSV
schema and readers (ob_csv, schema.json), metrics, packs of published files, a tool's output folder (staging), the
comparison statistics."""
