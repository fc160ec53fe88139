"""Numbers in Markdown generated from data (md_generate)."""
