import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Director-of-studies authority over one campus, or the whole school when campusId is null. */
@Entity({ name: 'director_of_studies_appointments' })
export class DirectorOfStudiesAppointmentEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'user_id', type: 'uuid' }) userId: string;
  @Column({ name: 'campus_id', type: 'uuid', nullable: true }) campusId: string | null;
}
