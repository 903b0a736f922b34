-- The account's newest intents, newest first (`Store::other_texts`: what a create request must not carry
-- besides its own post) read by an index walk that stops at its LIMIT. `intents_account (account)` made
-- PostgreSQL fetch and sort every intent the account ever had; `(account, id)` serves every reader of the
-- old index as well, so it replaces it (one index entry per intent, as before). SQLite's index on
-- `(account)` already ends in the rowid (`id`), so it is read in that order there and needs no change.
CREATE INDEX intents_account_newest ON intents (account, id);
DROP INDEX intents_account;
