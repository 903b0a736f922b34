-- A reconcile lookup holds a lease while it runs: start_reconcile sets lookup_expires_at on an indeterminate
-- intent, record_reconcile clears it. A lookup whose worker died (the lease ran out with nothing recorded)
-- is parked by the sweeper: its one automatic lookup is spent, so a person decides. NULL: no lookup running.
ALTER TABLE intents ADD COLUMN lookup_expires_at INTEGER;
