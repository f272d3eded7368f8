-- 0001: tasker schema and UUID v7 generators.
--
-- PostgreSQL 15 has no uuidv7(); PostgreSQL 18 has pg_catalog.uuidv7(), and
-- the pg_uuidv7 extension may provide one as well.  We only create our own
-- public.uuidv7() when no such function is reachable.
--
-- Every generator created here is VOLATILE: an IMMUTABLE/STABLE generator is
-- constant-folded when used as a column default in a multi-row INSERT, which
-- gives every row the same uuid.
SET LOCAL search_path TO tasker, public;

CREATE SCHEMA IF NOT EXISTS tasker;

-- public.uuidv7(): RFC 9562 version-7 UUID built from clock_timestamp()
-- milliseconds plus random bits taken from gen_random_uuid().
DO $uuid_shim$
BEGIN
    IF NOT EXISTS (
        SELECT 1
          FROM pg_catalog.pg_proc p
         WHERE p.proname = 'uuidv7'
           AND p.pronargs = 0
           AND p.pronamespace IN ('pg_catalog'::regnamespace, 'public'::regnamespace)
    ) THEN
        EXECUTE $create$
            CREATE FUNCTION public.uuidv7() RETURNS uuid
            LANGUAGE plpgsql VOLATILE PARALLEL SAFE
            AS $body$
            DECLARE
                unix_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
                bytes   bytea;
            BEGIN
                -- 48-bit big-endian millisecond timestamp, then 80 random bits
                bytes := decode(lpad(to_hex(unix_ms), 12, '0'), 'hex')
                         || substring(uuid_send(gen_random_uuid()) FROM 7 FOR 10);
                -- version nibble = 7
                bytes := set_byte(bytes, 6, (get_byte(bytes, 6) & 15) | 112);
                -- variant bits = 10xx
                bytes := set_byte(bytes, 8, (get_byte(bytes, 8) & 63) | 128);
                RETURN encode(bytes, 'hex')::uuid;
            END
            $body$
        $create$;
        COMMENT ON FUNCTION public.uuidv7() IS
            'Tasker shim: UUID version 7 for servers without a native uuidv7()';
    END IF;
END
$uuid_shim$;

-- tasker.uuid_generate_v7(): the function the tables' DEFAULTs bind to.
-- public.uuid_generate_v7(): compatibility alias (upstream creates it too).
DO $uuid_aliases$
DECLARE
    v_target text;
    v_public_oid oid;
    v_public_volatile "char";
    v_public_in_ext boolean;
BEGIN
    IF to_regprocedure('pg_catalog.uuidv7()') IS NOT NULL THEN
        v_target := 'pg_catalog.uuidv7()';
    ELSE
        v_target := 'public.uuidv7()';
    END IF;

    EXECUTE format(
        'CREATE OR REPLACE FUNCTION tasker.uuid_generate_v7() RETURNS uuid '
        'LANGUAGE sql VOLATILE PARALLEL SAFE AS %L',
        'SELECT ' || v_target);

    v_public_oid := to_regprocedure('public.uuid_generate_v7()');
    IF v_public_oid IS NULL THEN
        EXECUTE format(
            'CREATE FUNCTION public.uuid_generate_v7() RETURNS uuid '
            'LANGUAGE sql VOLATILE PARALLEL SAFE AS %L',
            'SELECT ' || v_target);
    ELSE
        SELECT p.provolatile,
               EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                        WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                          AND d.objid = p.oid
                          AND d.deptype = 'e')
          INTO v_public_volatile, v_public_in_ext
          FROM pg_catalog.pg_proc p
         WHERE p.oid = v_public_oid;

        -- Repair a non-volatile wrapper (e.g. the IMMUTABLE one some upstream
        -- versions create); leave extension-owned functions alone.
        IF v_public_volatile <> 'v' AND NOT v_public_in_ext THEN
            EXECUTE format(
                'CREATE OR REPLACE FUNCTION public.uuid_generate_v7() RETURNS uuid '
                'LANGUAGE sql VOLATILE PARALLEL SAFE AS %L',
                'SELECT ' || v_target);
        END IF;
    END IF;
END
$uuid_aliases$;
