"""The load client.

prompts and traces: what a cell sends, read from a corpus or the user's own trace;
client, http1 and sse: the streaming HTTP/1.1 client at a fixed concurrency and its
SSE parser; windows: the steady window of a load; probe: the logprob probe after it.
"""
