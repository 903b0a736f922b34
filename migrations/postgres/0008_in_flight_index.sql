-- The platform limit's count of dispatches in flight reads only authorized rows (see the SQLite twin).
-- Applied migrations are checksummed: never edit this file, add a new one.
CREATE INDEX intents_in_flight ON intents (COALESCE(contract_platform, platform)) WHERE state = 'authorized';
