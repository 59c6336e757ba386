-- Content and reference-data mirror. Rows that disappear upstream are marked removed
-- (removed_at), not deleted, and revived when they return. content_hash makes a refresh
-- that finds nothing changed write nothing (no updated_at churn).

CREATE TABLE properties (
  property_id            text        PRIMARY KEY,
  name                   text,
  description            text,
  currency               text,
  stars                  integer,
  stay_unit_kind         text,
  property_kind_id       integer,
  time_zone              text,
  multi_location         boolean,
  check_in_time          text,
  check_out_time         text,
  country_code           text,
  region                 text,
  city_name              text,
  address_line           text,
  postal_code            text,
  latitude               double precision,
  longitude              double precision,
  phones                 jsonb,
  emails                 jsonb,
  images                 jsonb,
  company_details        jsonb,
  raw                    jsonb       NOT NULL,
  content_hash           text        NOT NULL,
  first_seen_at          timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  removed_at             timestamptz
);
COMMENT ON TABLE properties IS 'Properties (hotels) of the API client, from the content API (include=All).';
COMMENT ON COLUMN properties.property_id IS 'Provider property id.';
COMMENT ON COLUMN properties.name IS 'Property name.';
COMMENT ON COLUMN properties.description IS 'Property description.';
COMMENT ON COLUMN properties.currency IS 'Currency of the property (ISO 4217).';
COMMENT ON COLUMN properties.stars IS 'Star rating.';
COMMENT ON COLUMN properties.stay_unit_kind IS 'NightRate or DailyRate.';
COMMENT ON COLUMN properties.property_kind_id IS 'Property kind (property_kinds.property_kind_id).';
COMMENT ON COLUMN properties.time_zone IS 'IANA time zone of the property: the zone of every property-local time in the mirror.';
COMMENT ON COLUMN properties.multi_location IS 'True when room types may have addresses of their own.';
COMMENT ON COLUMN properties.check_in_time IS 'Standard check-in time (HH:mm, property local).';
COMMENT ON COLUMN properties.check_out_time IS 'Standard check-out time (HH:mm, property local).';
COMMENT ON COLUMN properties.country_code IS 'Country of the address (ISO 3166-1 alpha-3).';
COMMENT ON COLUMN properties.region IS 'Region of the address.';
COMMENT ON COLUMN properties.city_name IS 'City of the address.';
COMMENT ON COLUMN properties.address_line IS 'Street address.';
COMMENT ON COLUMN properties.postal_code IS 'Postal code.';
COMMENT ON COLUMN properties.latitude IS 'Latitude of the address.';
COMMENT ON COLUMN properties.longitude IS 'Longitude of the address.';
COMMENT ON COLUMN properties.phones IS 'Phone numbers with remarks (JSON array).';
COMMENT ON COLUMN properties.emails IS 'E-mail addresses (JSON array).';
COMMENT ON COLUMN properties.images IS 'Image URLs (JSON array).';
COMMENT ON COLUMN properties.company_details IS 'Legal entity, tax and registration numbers, legal address (JSON).';
COMMENT ON COLUMN properties.raw IS 'The property exactly as received.';
COMMENT ON COLUMN properties.content_hash IS 'Hash of raw: a refresh rewrites the row only when it changed.';
COMMENT ON COLUMN properties.first_seen_at IS 'When the property first appeared (UTC).';
COMMENT ON COLUMN properties.updated_at IS 'When the content last changed (UTC).';
COMMENT ON COLUMN properties.removed_at IS 'When the property disappeared from the content API (UTC); NULL while present.';

CREATE TABLE room_types (
  property_id    text        NOT NULL,
  room_type_id   text        NOT NULL,
  name           text,
  description    text,
  category_code  text,
  category_name  text,
  size_value     numeric,
  adult_beds     integer,
  extra_beds     integer,
  position       integer,
  raw            jsonb       NOT NULL,
  content_hash   text        NOT NULL,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  removed_at     timestamptz,
  PRIMARY KEY (property_id, room_type_id)
);
COMMENT ON TABLE room_types IS 'Room types of each property (content).';
COMMENT ON COLUMN room_types.property_id IS 'Provider property id.';
COMMENT ON COLUMN room_types.room_type_id IS 'Room type id (booking_room_stays.room_type_id).';
COMMENT ON COLUMN room_types.name IS 'Room type name.';
COMMENT ON COLUMN room_types.description IS 'Room type description.';
COMMENT ON COLUMN room_types.category_code IS 'Room type category code (room_type_categories).';
COMMENT ON COLUMN room_types.category_name IS 'Room type category name.';
COMMENT ON COLUMN room_types.size_value IS 'Room size (square metres).';
COMMENT ON COLUMN room_types.adult_beds IS 'Main beds for adults.';
COMMENT ON COLUMN room_types.extra_beds IS 'Extra beds.';
COMMENT ON COLUMN room_types.position IS 'Display position set by the property.';
COMMENT ON COLUMN room_types.raw IS 'The room type exactly as received.';
COMMENT ON COLUMN room_types.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN room_types.updated_at IS 'When the room type last changed (UTC).';
COMMENT ON COLUMN room_types.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE room_type_amenities (
  property_id   text    NOT NULL,
  room_type_id  text    NOT NULL,
  position      integer NOT NULL,
  code          text,
  name          text,
  PRIMARY KEY (property_id, room_type_id, position)
);
COMMENT ON TABLE room_type_amenities IS 'Amenities of each room type (codes from room_amenities).';
COMMENT ON COLUMN room_type_amenities.property_id IS 'Provider property id.';
COMMENT ON COLUMN room_type_amenities.room_type_id IS 'Room type id.';
COMMENT ON COLUMN room_type_amenities.position IS 'Position in the room type''s list (0-based).';
COMMENT ON COLUMN room_type_amenities.code IS 'Amenity code.';
COMMENT ON COLUMN room_type_amenities.name IS 'Amenity name, when given.';

CREATE TABLE rate_plans (
  property_id           text        NOT NULL,
  rate_plan_id          text        NOT NULL,
  name                  text,
  description           text,
  currency              text,
  cancellation_rule_id  text,
  extra_stay_rule_id    text,
  corporate_only        boolean,
  stay_with_children_only boolean,
  vat_applicable        boolean,
  vat_included          boolean,
  vat_percent           numeric,
  raw                   jsonb       NOT NULL,
  content_hash          text        NOT NULL,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  removed_at            timestamptz,
  PRIMARY KEY (property_id, rate_plan_id)
);
COMMENT ON TABLE rate_plans IS 'Rate plans of each property (content).';
COMMENT ON COLUMN rate_plans.property_id IS 'Provider property id.';
COMMENT ON COLUMN rate_plans.rate_plan_id IS 'Rate plan id (booking_room_stays.rate_plan_id, booking_daily_rates.rate_plan_id).';
COMMENT ON COLUMN rate_plans.name IS 'Rate plan name.';
COMMENT ON COLUMN rate_plans.description IS 'Rate plan description.';
COMMENT ON COLUMN rate_plans.currency IS 'Currency of the rate plan.';
COMMENT ON COLUMN rate_plans.cancellation_rule_id IS 'Cancellation rule (cancellation_rules.rule_id).';
COMMENT ON COLUMN rate_plans.extra_stay_rule_id IS 'Early check-in / late check-out rule (extra_stay_rules.rule_id).';
COMMENT ON COLUMN rate_plans.corporate_only IS 'True when only for corporate clients.';
COMMENT ON COLUMN rate_plans.stay_with_children_only IS 'True when only bookable with children.';
COMMENT ON COLUMN rate_plans.vat_applicable IS 'True when VAT applies.';
COMMENT ON COLUMN rate_plans.vat_included IS 'True when VAT is included in the price.';
COMMENT ON COLUMN rate_plans.vat_percent IS 'VAT percent.';
COMMENT ON COLUMN rate_plans.raw IS 'The rate plan exactly as received (available services in raw.availableServices).';
COMMENT ON COLUMN rate_plans.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN rate_plans.updated_at IS 'When the rate plan last changed (UTC).';
COMMENT ON COLUMN rate_plans.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE services (
  property_id     text        NOT NULL,
  service_id      text        NOT NULL,
  name            text,
  description     text,
  kind            text,
  meal_plan_code  text,
  meal_plan_name  text,
  status          text,
  raw             jsonb       NOT NULL,
  content_hash    text        NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  removed_at      timestamptz,
  PRIMARY KEY (property_id, service_id)
);
COMMENT ON TABLE services IS 'Extra services of each property (content): Common, or Meal with a meal plan.';
COMMENT ON COLUMN services.property_id IS 'Provider property id.';
COMMENT ON COLUMN services.service_id IS 'Service id (booking_services.service_id).';
COMMENT ON COLUMN services.name IS 'Service name.';
COMMENT ON COLUMN services.description IS 'Service description.';
COMMENT ON COLUMN services.kind IS 'Common (any service but meals) or Meal.';
COMMENT ON COLUMN services.meal_plan_code IS 'Meal plan code (meal_plans.code) of Meal services.';
COMMENT ON COLUMN services.meal_plan_name IS 'Meal plan name of Meal services.';
COMMENT ON COLUMN services.status IS 'Active or Inactive.';
COMMENT ON COLUMN services.raw IS 'The service exactly as received.';
COMMENT ON COLUMN services.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN services.updated_at IS 'When the service last changed (UTC).';
COMMENT ON COLUMN services.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE property_amenities (
  property_id   text    NOT NULL,
  position      integer NOT NULL,
  code          text,
  display_name  text,
  charge_type   text,
  PRIMARY KEY (property_id, position)
);
COMMENT ON TABLE property_amenities IS 'Amenities of each property; a code (swimming_pool, restaurant) may appear more than once.';
COMMENT ON COLUMN property_amenities.property_id IS 'Provider property id.';
COMMENT ON COLUMN property_amenities.position IS 'Position in the property''s list (0-based).';
COMMENT ON COLUMN property_amenities.code IS 'Amenity code (property_amenity_types.code).';
COMMENT ON COLUMN property_amenities.display_name IS 'Amenity name.';
COMMENT ON COLUMN property_amenities.charge_type IS 'Free, Chargeable, or None (charge type does not apply).';

CREATE TABLE cancellation_rules (
  property_id           text        NOT NULL,
  rule_id               text        NOT NULL,
  reference_point_kind  text,
  reference_point_time  text,
  is_free               boolean     NOT NULL,
  raw                   jsonb       NOT NULL,
  content_hash          text        NOT NULL,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  removed_at            timestamptz,
  PRIMARY KEY (property_id, rule_id)
);
COMMENT ON TABLE cancellation_rules IS 'Cancellation rules of each property, referenced by rate_plans.cancellation_rule_id.';
COMMENT ON COLUMN cancellation_rules.property_id IS 'Provider property id.';
COMMENT ON COLUMN cancellation_rules.rule_id IS 'Rule id.';
COMMENT ON COLUMN cancellation_rules.reference_point_kind IS 'What the terms count from: ProviderArrivalTime, ProviderDepartureTime, GuestArrivalTime, CustomArrivalTime, BookingCreationTime.';
COMMENT ON COLUMN cancellation_rules.reference_point_time IS 'HH:mm, property local, for CustomArrivalTime.';
COMMENT ON COLUMN cancellation_rules.is_free IS 'True when the rule has no terms: cancellation is free of charge.';
COMMENT ON COLUMN cancellation_rules.raw IS 'The rule exactly as received.';
COMMENT ON COLUMN cancellation_rules.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN cancellation_rules.updated_at IS 'When the rule last changed (UTC).';
COMMENT ON COLUMN cancellation_rules.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE cancellation_rule_terms (
  property_id                text    NOT NULL,
  rule_id                    text    NOT NULL,
  position                   integer NOT NULL,
  before_arrival_matching    text,
  before_arrival_unit        text,
  before_arrival_value       integer,
  before_arrival_value_max   integer,
  penalty_calculation_method text,
  penalty_value              numeric,
  penalty_value_currency     text,
  PRIMARY KEY (property_id, rule_id, position)
);
COMMENT ON TABLE cancellation_rule_terms IS 'Terms of each cancellation rule: when before arrival, which penalty.';
COMMENT ON COLUMN cancellation_rule_terms.property_id IS 'Provider property id.';
COMMENT ON COLUMN cancellation_rule_terms.rule_id IS 'Rule id.';
COMMENT ON COLUMN cancellation_rule_terms.position IS 'Position of the term in the rule (0-based).';
COMMENT ON COLUMN cancellation_rule_terms.before_arrival_matching IS 'NoMatter, AtLeast (>= value), NoMoreThan (<= value), Between (value to value_max).';
COMMENT ON COLUMN cancellation_rule_terms.before_arrival_unit IS 'None (with NoMatter), Day or Hour.';
COMMENT ON COLUMN cancellation_rule_terms.before_arrival_value IS 'Period before the reference point.';
COMMENT ON COLUMN cancellation_rule_terms.before_arrival_value_max IS 'Upper bound, with Between.';
COMMENT ON COLUMN cancellation_rule_terms.penalty_calculation_method IS 'NoPenalty, FirstNightPercent, PrepaymentPercent, FirstNights (or a newer value).';
COMMENT ON COLUMN cancellation_rule_terms.penalty_value IS 'Percentage or number of nights, per method.';
COMMENT ON COLUMN cancellation_rule_terms.penalty_value_currency IS 'Currency of the penalty.';

CREATE TABLE cancellation_rule_arrival_dates (
  property_id    text    NOT NULL,
  rule_id        text    NOT NULL,
  term_position  integer NOT NULL,
  position       integer NOT NULL,
  start_date     date,
  end_date       date,
  is_endless     boolean,
  PRIMARY KEY (property_id, rule_id, term_position, position)
);
COMMENT ON TABLE cancellation_rule_arrival_dates IS 'Check-in date ranges (property local, inclusive) in which a cancellation term applies.';
COMMENT ON COLUMN cancellation_rule_arrival_dates.property_id IS 'Provider property id.';
COMMENT ON COLUMN cancellation_rule_arrival_dates.rule_id IS 'Rule id.';
COMMENT ON COLUMN cancellation_rule_arrival_dates.term_position IS 'The term (cancellation_rule_terms.position).';
COMMENT ON COLUMN cancellation_rule_arrival_dates.position IS 'Position of the range in the term (0-based).';
COMMENT ON COLUMN cancellation_rule_arrival_dates.start_date IS 'First check-in date.';
COMMENT ON COLUMN cancellation_rule_arrival_dates.end_date IS 'Last check-in date (ignore when is_endless).';
COMMENT ON COLUMN cancellation_rule_arrival_dates.is_endless IS 'True: no end date.';

CREATE TABLE extra_stay_rules (
  property_id                       text        NOT NULL,
  rule_id                           text        NOT NULL,
  check_in_time                     text,
  overrides_property_check_in_time  boolean,
  check_out_time                    text,
  overrides_property_check_out_time boolean,
  raw                               jsonb       NOT NULL,
  content_hash                      text        NOT NULL,
  updated_at                        timestamptz NOT NULL DEFAULT now(),
  removed_at                        timestamptz,
  PRIMARY KEY (property_id, rule_id)
);
COMMENT ON TABLE extra_stay_rules IS 'Early check-in and late check-out rules of each property, referenced by rate_plans.extra_stay_rule_id.';
COMMENT ON COLUMN extra_stay_rules.property_id IS 'Provider property id.';
COMMENT ON COLUMN extra_stay_rules.rule_id IS 'Rule id.';
COMMENT ON COLUMN extra_stay_rules.check_in_time IS 'Standard check-in time without surcharge (HH:mm).';
COMMENT ON COLUMN extra_stay_rules.overrides_property_check_in_time IS 'True when the rule overrides the property''s check-in time.';
COMMENT ON COLUMN extra_stay_rules.check_out_time IS 'Standard check-out time (HH:mm).';
COMMENT ON COLUMN extra_stay_rules.overrides_property_check_out_time IS 'True when the rule overrides the property''s check-out time.';
COMMENT ON COLUMN extra_stay_rules.raw IS 'The rule exactly as received.';
COMMENT ON COLUMN extra_stay_rules.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN extra_stay_rules.updated_at IS 'When the rule last changed (UTC).';
COMMENT ON COLUMN extra_stay_rules.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE extra_stay_rule_periods (
  property_id              text    NOT NULL,
  rule_id                  text    NOT NULL,
  kind                     text    NOT NULL,
  position                 integer NOT NULL,
  start_time               text,
  end_time                 text,
  charge_type              text,
  occupy_quota             boolean,
  percentage               numeric,
  extra_placement_enabled  boolean,
  extra_service_option     text,
  rates                    jsonb,
  PRIMARY KEY (property_id, rule_id, kind, position)
);
COMMENT ON TABLE extra_stay_rule_periods IS 'Surcharge periods of an extra stay rule: before check-in (early_check_in) or after check-out (late_check_out).';
COMMENT ON COLUMN extra_stay_rule_periods.property_id IS 'Provider property id.';
COMMENT ON COLUMN extra_stay_rule_periods.rule_id IS 'Rule id.';
COMMENT ON COLUMN extra_stay_rule_periods.kind IS 'early_check_in or late_check_out.';
COMMENT ON COLUMN extra_stay_rule_periods.position IS 'Position of the period in its list (0-based).';
COMMENT ON COLUMN extra_stay_rule_periods.start_time IS 'Start (HH:mm).';
COMMENT ON COLUMN extra_stay_rule_periods.end_time IS 'End (HH:mm; 24:00 occurs).';
COMMENT ON COLUMN extra_stay_rule_periods.charge_type IS 'Free, Fixed, Percent, HourlyRate, HourlyRateAutoCalculated, Forbidden.';
COMMENT ON COLUMN extra_stay_rule_periods.occupy_quota IS 'True: availability is guaranteed for the extra stay.';
COMMENT ON COLUMN extra_stay_rule_periods.percentage IS 'Percent of the daily rate, for Percent.';
COMMENT ON COLUMN extra_stay_rule_periods.extra_placement_enabled IS 'For Percent: true when an extra guest is surcharged.';
COMMENT ON COLUMN extra_stay_rule_periods.extra_service_option IS 'For Percent: which extra services are surcharged (None, All, MealOnly).';
COMMENT ON COLUMN extra_stay_rule_periods.rates IS 'Rates per currency for Fixed and HourlyRate: JSON array of {currency, rate}.';

CREATE TABLE meal_plans (
  code        text        PRIMARY KEY,
  name        text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  removed_at  timestamptz
);
COMMENT ON TABLE meal_plans IS 'Reference list of meal plans (content).';
COMMENT ON COLUMN meal_plans.code IS 'Meal plan code (services.meal_plan_code, booking_services.meal_plan_code).';
COMMENT ON COLUMN meal_plans.name IS 'Meal plan name.';
COMMENT ON COLUMN meal_plans.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN meal_plans.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE room_type_categories (
  code        text        PRIMARY KEY,
  name        text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  removed_at  timestamptz
);
COMMENT ON TABLE room_type_categories IS 'Reference list of room type categories (content).';
COMMENT ON COLUMN room_type_categories.code IS 'Category code (room_types.category_code).';
COMMENT ON COLUMN room_type_categories.name IS 'Category name.';
COMMENT ON COLUMN room_type_categories.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN room_type_categories.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE room_amenities (
  code           text        PRIMARY KEY,
  name           text,
  category_name  text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  removed_at     timestamptz
);
COMMENT ON TABLE room_amenities IS 'Reference list of room amenities with their category (content: room amenity categories).';
COMMENT ON COLUMN room_amenities.code IS 'Amenity code (room_type_amenities.code).';
COMMENT ON COLUMN room_amenities.name IS 'Amenity name.';
COMMENT ON COLUMN room_amenities.category_name IS 'Category (group) of the amenity.';
COMMENT ON COLUMN room_amenities.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN room_amenities.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE payment_methods (
  code        text        PRIMARY KEY,
  type        text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  removed_at  timestamptz
);
COMMENT ON TABLE payment_methods IS 'Reference list of payment methods (reference-data API).';
COMMENT ON COLUMN payment_methods.code IS 'Payment method code.';
COMMENT ON COLUMN payment_methods.type IS 'Payment method type.';
COMMENT ON COLUMN payment_methods.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN payment_methods.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE property_amenity_types (
  code                    text        PRIMARY KEY,
  display_name            text,
  charge_type_applicable  boolean,
  updated_at              timestamptz NOT NULL DEFAULT now(),
  removed_at              timestamptz
);
COMMENT ON TABLE property_amenity_types IS 'Reference list of property amenity types (reference-data API).';
COMMENT ON COLUMN property_amenity_types.code IS 'Amenity code (property_amenities.code).';
COMMENT ON COLUMN property_amenity_types.display_name IS 'Amenity name.';
COMMENT ON COLUMN property_amenity_types.charge_type_applicable IS 'True when the amenity may be free or paid.';
COMMENT ON COLUMN property_amenity_types.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN property_amenity_types.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE property_kinds (
  property_kind_id    integer     PRIMARY KEY,
  display_name        text,
  property_kind_type  text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  removed_at          timestamptz
);
COMMENT ON TABLE property_kinds IS 'Reference list of property kinds (reference-data API).';
COMMENT ON COLUMN property_kinds.property_kind_id IS 'Property kind id (properties.property_kind_id).';
COMMENT ON COLUMN property_kinds.display_name IS 'Property kind name.';
COMMENT ON COLUMN property_kinds.property_kind_type IS 'System-defined type of the kind.';
COMMENT ON COLUMN property_kinds.updated_at IS 'When the entry last changed (UTC).';
COMMENT ON COLUMN property_kinds.removed_at IS 'When it disappeared upstream (UTC); NULL while present.';

CREATE TABLE content_refreshes (
  id            bigserial   PRIMARY KEY,
  started_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz,
  outcome       text,
  properties    integer,
  requests      integer,
  changed_rows  integer,
  quarantined   integer,
  error         text
);
COMMENT ON TABLE content_refreshes IS 'One row per refresh of content and reference data.';
COMMENT ON COLUMN content_refreshes.id IS 'Refresh id.';
COMMENT ON COLUMN content_refreshes.started_at IS 'Start (UTC).';
COMMENT ON COLUMN content_refreshes.finished_at IS 'End (UTC); NULL while running or when interrupted.';
COMMENT ON COLUMN content_refreshes.outcome IS 'ok, failed or stopped.';
COMMENT ON COLUMN content_refreshes.properties IS 'Properties seen in the content API.';
COMMENT ON COLUMN content_refreshes.requests IS 'Provider requests made by the refresh.';
COMMENT ON COLUMN content_refreshes.changed_rows IS 'Rows inserted, updated, removed or revived.';
COMMENT ON COLUMN content_refreshes.quarantined IS 'Payloads quarantined by the refresh.';
COMMENT ON COLUMN content_refreshes.error IS 'Error message when the refresh failed.';

-- Views for reports: bookings with the names content gives to the ids they reference.
CREATE VIEW booking_room_stays_named AS
SELECT s.property_id, p.name AS property_name, s.number, b.status, s.stay_index,
       s.arrival_at, s.departure_at,
       s.room_type_id, COALESCE(rt.name, s.room_type_name) AS room_type_name,
       rt.category_code AS room_type_category_code, rt.category_name AS room_type_category_name,
       s.rate_plan_id, COALESCE(rp.name, s.rate_plan_name) AS rate_plan_name,
       rp.cancellation_rule_id, rp.extra_stay_rule_id,
       s.adult_count, s.child_ages, s.price_before_tax, s.price_after_tax, s.tax_amount,
       b.currency_code
FROM booking_room_stays s
JOIN bookings b USING (property_id, number)
LEFT JOIN properties p ON p.property_id = s.property_id
LEFT JOIN room_types rt ON rt.property_id = s.property_id AND rt.room_type_id = s.room_type_id
LEFT JOIN rate_plans rp ON rp.property_id = s.property_id AND rp.rate_plan_id = s.rate_plan_id;
COMMENT ON VIEW booking_room_stays_named IS 'Room stays with property, room type (and category) and rate plan names from content; names fall back to those in the booking.';

CREATE VIEW booking_daily_rates_named AS
SELECT r.property_id, r.number, b.status, r.stay_index, r.stay_date,
       r.rate_plan_id, rp.name AS rate_plan_name, r.price_before_tax, b.currency_code
FROM booking_daily_rates r
JOIN bookings b USING (property_id, number)
LEFT JOIN rate_plans rp ON rp.property_id = r.property_id AND rp.rate_plan_id = r.rate_plan_id;
COMMENT ON VIEW booking_daily_rates_named IS 'Nightly rates with the rate plan name from content.';

CREATE VIEW booking_services_named AS
SELECT bs.property_id, bs.number, b.status, bs.stay_index, bs.service_id,
       COALESCE(sv.name, bs.name) AS service_name,
       COALESCE(sv.kind, bs.kind) AS kind,
       COALESCE(bs.meal_plan_code, sv.meal_plan_code) AS meal_plan_code,
       COALESCE(mp.name, sv.meal_plan_name) AS meal_plan_name,
       bs.inclusive, bs.price_before_tax, bs.price_after_tax, b.currency_code
FROM booking_services bs
JOIN bookings b USING (property_id, number)
LEFT JOIN services sv ON sv.property_id = bs.property_id AND sv.service_id = bs.service_id
LEFT JOIN meal_plans mp ON mp.code = COALESCE(bs.meal_plan_code, sv.meal_plan_code);
COMMENT ON VIEW booking_services_named IS 'Booking services with service and meal plan names from content.';
