-- sessionbench schema version 15: the turns that have not ended, indexed apart.
-- PendingTurns (`sessionbench run`, the workbench's start) asks for them across every
-- conversation; turns_by_conv needs a conversation first, so that read scanned the whole
-- turns table (1.3 ms at 1,000 turns, on the path of `run`'s first turn). Running and
-- interrupted turns are few at any time: the partial index stays small.
CREATE INDEX turns_unended ON turns(id) WHERE status IN ('running', 'interrupted');
