-- $1 statement_timeout_ms
SELECT set_config('statement_timeout', COALESCE($1::text, current_setting('statement_timeout')), true),
       set_config('plan_cache_mode', 'force_generic_plan', true)
