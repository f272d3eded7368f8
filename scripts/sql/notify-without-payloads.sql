-- Notifications without message bodies (issue #26, item 9).
--
-- `tasker.pgmq_send_with_notify` embeds a message of fewer than 7,000 characters in its
-- `pgmq_message_ready.<namespace>` notification (`message_with_payload`), as upstream's does. Any
-- role that can connect can LISTEN on any channel, so it can read those messages: task requests
-- with their whole context, step messages. After this script every notification carries only the
-- queue name and message id (`message_ready`); workers and orchestration read the message by id, so
-- nothing else changes (this worker and this orchestration never act on an embedded body anyway: they
-- read every notified message by id; upstream's worker reads `message_ready` by id too).
--
-- Usage, once per database, as the owner of the `tasker` schema (re-run after migrating, since the
-- migration defines the function again):
--   psql "$OWNER_URL" -f scripts/sql/notify-without-payloads.sql
-- Sessions that already sent a notification may keep the old threshold until they reconnect (the
-- function is IMMUTABLE, so PL/pgSQL may have folded it into a cached plan): restart the
-- orchestration and the workers after running it.
CREATE OR REPLACE FUNCTION tasker.pgmq_payload_size_threshold()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $fn$ SELECT 0 $fn$;
