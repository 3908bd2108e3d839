import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity({ name: 'school_branding' })
export class SchoolBrandingEntity {
  @PrimaryColumn({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'display_name', type: 'text' }) displayName: string;
  @Column({ type: 'text', nullable: true }) motto: string | null;
  @Column({ name: 'primary_color', type: 'text' }) primaryColor: string;
  @Column({ name: 'logo_url', type: 'text', nullable: true }) logoUrl: string | null;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
