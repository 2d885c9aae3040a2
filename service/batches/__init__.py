"""The Batch API: batches of requests from an uploaded file, run in the background behind interactive calls."""
