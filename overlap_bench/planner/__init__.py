"""The planner's tools on the Python side: phase4_predict's what-if for other GPU counts (predict) and the check of its
predictions against measured runs (check_prediction)."""
