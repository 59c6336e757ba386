/**
 * The columns of the mirror that hold personal data of guests: names, contact data, birth
 * dates, documents, free text about them, and the payloads as received (`raw`, which holds
 * all of these). Reader roles see them only when granted with --personal-data
 * (src/store/reader-role.ts). What of a payload is personal, and is stripped before it is
 * stored, is decided by src/mapping/personal-data.ts; this list is the columns it can land in.
 */
export const PERSONAL_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  bookings: ['customer_first_name', 'customer_last_name', 'raw'],
  booking_guests: ['first_name', 'last_name'],
  booking_loyalty_cards: ['card_number'],
  pms_reservations: [
    'customer_first_name',
    'customer_middle_name',
    'customer_last_name',
    'customer_email',
    'customer_phone',
    'customer_birth_date',
    'customer_citizenship',
    'customer_comment',
    'raw',
  ],
  pms_guests: ['first_name', 'middle_name', 'last_name', 'email', 'phone', 'birth_date', 'citizenship', 'raw'],
  quarantine: ['raw_body'],
};
