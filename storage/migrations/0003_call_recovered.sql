-- sessionbench schema version 3: how a call recorded outside the engine (by the recording
-- proxy) was understood: 'exact' (a DSPy request that formats back byte for byte from what
-- was recovered), 'inexact' (recognised, but not byte for byte), 'messages' (no known
-- format). Empty for the engine's own calls.
ALTER TABLE calls ADD COLUMN recovered TEXT NOT NULL DEFAULT '';
