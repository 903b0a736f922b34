-- The platform limit's count of dispatches in flight (authorization, `platform_in_flight`) read every intent
-- row: `SELECT COUNT(*) FROM intents WHERE state = 'authorized' AND COALESCE(contract_platform, platform) = ?`
-- was `SCAN intents` on SQLite once ANALYZE had seen that almost every row is settled (measured with 10^5
-- published intents), so every authorization of a limited platform grew with the store's history. Only the
-- authorized rows are in this index: it stays as small as what is in flight. Applied migrations are
-- checksummed: never edit this file, add a new one.
CREATE INDEX intents_in_flight ON intents (COALESCE(contract_platform, platform)) WHERE state = 'authorized';
